#!/usr/bin/env bash
# tc-tune, the tuning file and tc-info end to end, on this node:
#  - tcrun -n 2 tc-tune -o FILE --quick writes a well-formed file (the intra-node class and
#    gamma measured, the inter-node class absent: one node);
#    the file's alpha_intra and o are at least what every rank at once measured (the floors);
#  - --validate refuses --rounds outside 1-15 and --target-ms below 0.01, naming the option;
#  - tc-tune -o - (a world of one) writes a file tc-info reads to standard output;
#  - TC_TUNING_FILE=FILE tc-info --json shows the file's values exactly, sourced "file", the
#    others "default"; a parameter's own variable replaces the file's ("env"); a version 1
#    file (no overhead_us) is still read;
#  - a bad file: tc-info shows the error naming file, line and key, and a job refuses to start
#    with TC_ERR_CONFIG naming them; a missing file likewise;
#  - tcrun -n 2 tc-tune -o FILE --rules --quick: every cell it measured is covered by a rule
#    naming its fastest algorithm (or one within 3%); tc-info shows the rules; --validate
#    with the file: the selection is the rule at every size; --rules without -o is refused;
#  - tc-tune --validate refuses to run when the ranks' models differ, naming the parameter;
#  - tc-tune --validate --quick at 2 and 4 ranks (text, and CSV at 2 ranks with the file) prints
#    a well-formed table: every collective, ratios = chosen / fastest >= 1, the summary's counts
#    equal to the rows.
#   tests/integration/run_tune.sh BINDIR
# BINDIR holds tools/tcrun/tcrun, tools/tc-tune/tc-tune and tools/tc-info/tc-info (bazel-bin, or
# what tools/ci/test.sh stashes).
set -uo pipefail
bin=${1:?usage: run_tune.sh BINDIR}
tcrun=$bin/tools/tcrun/tcrun
tune=$bin/tools/tc-tune/tc-tune
info=$bin/tools/tc-info/tc-info
tcperf=$bin/tools/tcperf/tcperf
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/tc_run_tune.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
    echo "run_tune: FAILED: $*" >&2
    fail=1
}
unset TC_TUNING_FILE TC_ALGO_ALPHA_INTRA_US TC_ALGO_ALPHA_INTER_US TC_ALGO_BETA_INTRA_US \
    TC_ALGO_BETA_INTER_US TC_ALGO_GAMMA_US TC_ALGO_OVERHEAD_US

echo "--- tc-tune -o at 2 ranks"
f=$tmp/job.tune
if ! out=$(timeout -k 10 120 "$tcrun" -n 2 "$tune" -o "$f" --quick 2>&1); then
    echo "$out" | tail -n 20
    bad "tcrun -n 2 tc-tune -o $f --quick"
elif ! python3 "$here/tune_check.py" file "$f"; then
    cat "$f"
    bad "the tuning file"
elif ! python3 "$here/tune_check.py" floors "$f" <(echo "$out"); then
    echo "$out" | tail -n 30
    bad "alpha or o below what every rank at once measured"
fi

echo "--- tc-tune -o into a directory that does not exist: refused before measuring"
SECONDS=0
out=$(timeout -k 10 120 "$tcrun" -n 2 "$tune" -o "$tmp/no/such/dir.tune" --quick 2>&1)
rc=$?
[ $rc -eq 2 ] && [ $SECONDS -lt 30 ] &&
    grep -q -- "-o $tmp/no/such/dir.tune: cannot create $tmp/no/such/dir.tune.tmp" <<<"$out" ||
    { echo "$out" | tail -n 5; bad "tc-tune -o in a missing directory: exit $rc after $SECONDS s"; }
"$tune" -o "$tmp/x.tune" extra >"$tmp/extra.txt" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "unexpected argument 'extra'" "$tmp/extra.txt" ||
    { cat "$tmp/extra.txt"; bad "tc-tune -o FILE extra: exit $rc, or the argument not named"; }

echo "--- tc-tune --validate refuses bad --rounds and --target-ms"
for a in "--rounds 0" "--rounds 16" "--rounds x" "--target-ms 0" "--target-ms -1"; do
    # shellcheck disable=SC2086
    "$tune" --validate $a >"$tmp/bad_opt.txt" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -q -- "${a% *}" "$tmp/bad_opt.txt" ||
        { cat "$tmp/bad_opt.txt"; bad "tc-tune --validate $a: exit $rc, or no message naming it"; }
done

echo "--- TC_TUNING_FILE=FILE tc-info"
if [ -f "$f" ]; then
    TC_TUNING_FILE=$f "$info" --json >"$tmp/info.json" &&
        python3 "$here/tune_check.py" info "$f" "$tmp/info.json" ||
        bad "tc-info --json does not show the file's values"
    TC_TUNING_FILE=$f TC_ALGO_ALPHA_INTRA_US=42 "$info" --json >"$tmp/info_env.json" &&
        python3 "$here/tune_check.py" info "$f" "$tmp/info_env.json" alpha_intra_us=42 ||
        bad "TC_ALGO_ALPHA_INTRA_US does not replace the file's value"
    TC_TUNING_FILE=$f "$info" | grep -q "tuning file $f: version 2" ||
        bad "tc-info's text does not name the tuning file"
    TC_TUNING_FILE=$f "$info" | grep -q "overhead_us .* file" ||
        bad "tc-info's text does not show the file's overhead_us"
fi
# a version 1 file (before overhead_us) is still read; o keeps its default
printf 'tcomms_tuning = 1\nalpha_intra_us = 2.5\n' >"$tmp/v1.tune"
TC_TUNING_FILE=$tmp/v1.tune "$info" >"$tmp/v1.txt" 2>&1
grep -q "version 1" "$tmp/v1.txt" && grep -q "alpha_intra_us  2.5 .*file" "$tmp/v1.txt" &&
    grep -q "overhead_us .*default" "$tmp/v1.txt" ||
    { cat "$tmp/v1.txt"; bad "a version 1 tuning file is not read as before"; }

echo "--- tc-tune -o - without a launcher: the file alone on standard output"
if "$tune" -o - --quick -q >"$tmp/stdout.tune" 2>"$tmp/stdout.err"; then
    TC_TUNING_FILE=$tmp/stdout.tune "$info" | grep -q "gamma_us .* file" ||
        { cat "$tmp/stdout.tune"; bad "tc-tune -o - did not write a tuning file tc-info reads"; }
else
    tail -n 5 "$tmp/stdout.err"
    bad "tc-tune -o - --quick"
fi

echo "--- a bad and a missing tuning file"
printf 'tcomms_tuning = 1\nalpha_intra_us = 1\n\nbeta_intra = 2\n' >"$tmp/bad.tune"
want="$tmp/bad.tune:4: unknown key \"beta_intra\""
TC_TUNING_FILE=$tmp/bad.tune "$info" | grep -qF "Cost model: ERROR: TC_TUNING_FILE: $want" ||
    bad "tc-info does not report the bad file"
out=$(TC_TUNING_FILE=$tmp/bad.tune timeout -k 10 60 "$tcrun" -n 2 "$tcperf" -b 8 -e 8 2>&1) &&
    bad "a job started with a bad tuning file"
grep -qF "TC_ERR_CONFIG" <<<"$out" && grep -qF "$want" <<<"$out" ||
    { echo "$out" | tail -n 5; bad "the job's error does not name the file, line and key"; }
out=$(TC_TUNING_FILE=$tmp/none.tune timeout -k 10 60 "$tcrun" -n 2 "$tcperf" -b 8 -e 8 2>&1) &&
    bad "a job started with a missing tuning file"
grep -qF "TC_TUNING_FILE=$tmp/none.tune: cannot open: No such file" <<<"$out" ||
    { echo "$out" | tail -n 5; bad "the job's error does not name the missing file"; }

echo "--- tc-tune -o --rules at 2 ranks, and the selection following them"
fr=$tmp/rules.tune
"$tune" --rules --validate >"$tmp/bad_rules.txt" 2>&1 && bad "--rules without -o ran"
grep -q -- "--rules goes with -o" "$tmp/bad_rules.txt" ||
    { cat "$tmp/bad_rules.txt"; bad "--rules without -o: no message"; }
if ! out=$(timeout -k 10 180 "$tcrun" -n 2 "$tune" -o "$fr" --rules --quick 2>&1); then
    echo "$out" | tail -n 20
    bad "tcrun -n 2 tc-tune -o $fr --rules --quick"
elif ! python3 "$here/tune_check.py" rules "$fr" <(echo "$out"); then
    cat "$fr"
    echo "$out" | grep fastest
    bad "the rules do not name each cell's fastest algorithm"
else
    TC_TUNING_FILE=$fr "$info" >"$tmp/rules_info.txt" 2>&1
    grep -q "tuning file $fr: version 3" "$tmp/rules_info.txt" &&
        grep -q "rules: [0-9]*, for 2 ranks on 1 node(s) of 2, before the model" \
            "$tmp/rules_info.txt" && grep -q "^    barrier  *0:" "$tmp/rules_info.txt" ||
        { cat "$tmp/rules_info.txt"; bad "tc-info does not show the rules"; }
    if out=$(TC_TUNING_FILE=$fr timeout -k 10 180 "$tcrun" -n 2 "$tune" --validate --quick \
        2>"$tmp/stderr"); then
        sed -n 's/^\[0\] //p' <<<"$out" >"$tmp/rules_table"
        python3 "$here/tune_check.py" picks "$tmp/rules_table" "$fr" ||
            { cat "$tmp/rules_table"; bad "the selection does not follow the rules"; }
    else
        tail -n 20 "$tmp/stderr"
        bad "tc-tune --validate --quick with the rules"
    fi
fi

echo "--- tc-tune --validate refuses ranks with different models"
printf '#!/bin/sh\n[ "$PMIX_RANK" = 1 ] && export TC_ALGO_ALPHA_INTRA_US=9\nexec "$@"\n' >"$tmp/diff.sh"
chmod +x "$tmp/diff.sh"
out=$(timeout -k 10 60 "$tcrun" -n 2 "$tmp/diff.sh" "$tune" --validate --quick 2>&1) &&
    bad "--validate ran with different models"
grep -q "TC_ERR_CONFIG: the ranks select with different cost models: alpha_intra_us" <<<"$out" ||
    { echo "$out" | tail -n 5; bad "--validate does not name the parameter that differs"; }

for run in "2 text" "4 text" "2 csv"; do
    set -- $run
    echo "--- tc-tune --validate --quick at $1 ranks ($2)"
    args=(--validate --quick)
    envs=()
    if [ "$2" = csv ]; then
        args+=(--csv)
        [ -f "$f" ] && envs=(TC_TUNING_FILE="$f")
    fi
    # the table from standard output only (a sanitizer's summary goes to standard error)
    if ! out=$(env "${envs[@]}" timeout -k 10 180 "$tcrun" -n "$1" "$tune" "${args[@]}" \
        2>"$tmp/stderr"); then
        echo "$out" | tail -n 20
        tail -n 20 "$tmp/stderr"
        bad "tc-tune --validate --quick at $1 ranks"
        continue
    fi
    sed -n 's/^\[0\] //p' <<<"$out" >"$tmp/table"
    python3 "$here/tune_check.py" table "$tmp/table" "$2" "${envs[*]:+file}" ||
        { cat "$tmp/table"; bad "the --validate table at $1 ranks ($2)"; }
done

[ $fail -eq 0 ] && echo "run_tune: all passed"
exit $fail
