#!/usr/bin/env bash
# The cost model fitted to shaped links and checked against measurement, for the record
# (docs/tuning.md): for each RATE (Mbit/s), a 3-node virtual cluster whose every link is shaped
# to RATE, 2 ranks per node (torchrun-style environment, launch_env.sh): tc-tune -o fits the
# link classes (with --rules, TC_STUDY_RULES=1 the default: and times every algorithm of every
# collective from 8 B to 64 MiB x 8, keeping the fastest as rules), then, in another job,
# tc-tune --validate with that file times every algorithm of every collective from
# TC_STUDY_VMIN (default 8) bytes to 64 MiB x 8 beside the selection's choice (TC_STUDY_VMIN=32:
# the sizes between those the rules were measured at). TC_STUDY_FILE=FILE: validate FILE
# instead of measuring one (then OUTDIR gets validate.RATE.txt only).
#   tests/cluster/tune_study.sh BINDIR OUTDIR [RATE...]     (default RATEs: 1000 2000 5000)
# OUTDIR gets tune.RATE (the file), validate.RATE.txt (rank 0's table) and the ranks' logs.
# Needs root; 3-10 minutes per rate (measuring and validating: 10 at 1 Gbit/s, 3 at 5 Gbit/s). Not in tools/ci/test.sh: run it on a quiet machine.
# The emulated nodes share this machine's cores, but each sees them all, so the runtime would
# poll 50 us before sleeping as on a node with a core per rank and the figures would show the
# scheduler's turns; TC_SPIN_US=0 (set here unless given) is what it does on its own where it
# knows that ranks outnumber cores.
set -uo pipefail
export TC_SPIN_US=${TC_SPIN_US:-0}
vmin=${TC_STUDY_VMIN:-8}
rules=()
[ "${TC_STUDY_RULES:-1}" = 1 ] && rules=(--rules -b 8 -e 64M -f 8 --max-seconds 2400)
bin=$(cd "${1:?usage: tune_study.sh BINDIR OUTDIR [RATE...]}" && pwd)
out=${2:?usage: tune_study.sh BINDIR OUTDIR [RATE...]}
shift 2
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(1000 2000 5000)
mkdir -p "$out" && out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
vc=$here/vcluster.sh
tune=$bin/tools/tc-tune/tc-tune
dir=""
trap '[ -z "$dir" ] || "$vc" down "$dir" >/dev/null 2>&1' EXIT
fail=0
for rate in "${rates[@]}"; do
    [[ $rate =~ ^[1-9][0-9]*$ ]] || { echo "tune_study: RATE $rate: Mbit/s, a number" >&2; exit 2; }
    dir=$(mktemp -d /tmp/tc_tune_study.XXXXXX)
    "$vc" up "$dir" --nodes 3 --rate "${rate}mbit" >/dev/null || { echo "tune_study: no cluster" >&2; exit 1; }
    file=${TC_STUDY_FILE:-$out/tune.$rate}
    if [ -n "${TC_STUDY_FILE:-}" ]; then
        echo "=== $rate Mbit/s: the tuning file $file"
    else
        echo "=== $rate Mbit/s: tc-tune -o $file"
    fi
    if [ -n "${TC_STUDY_FILE:-}" ] || TC_LOG=error "$here/launch_env.sh" --timeout 3000 "$dir" \
        2,2,2 "$tune" -o "$file" "${rules[@]}" >"$out/tune.$rate.log" 2>&1; then
        grep -v '^#' "$file" | grep '='
        echo "=== $rate Mbit/s: tc-tune --validate ($vmin B to 64 MiB)"
        TC_LOG=error TC_TUNING_FILE=$file "$here/launch_env.sh" --timeout 3000 "$dir" \
            2,2,2 "$tune" --validate -b "$vmin" -e 64M -f 8 --max-seconds 2400 \
            >"$out/validate.$rate.log" 2>&1 || { fail=1; tail -5 "$out/validate.$rate.log"; }
        sed -n 's/^\[0\] //p' "$out/validate.$rate.log" >"$out/validate.$rate.txt"
        tail -n 3 "$out/validate.$rate.txt"
    else
        fail=1
        tail -5 "$out/tune.$rate.log"
    fi
    "$vc" down "$dir" >/dev/null
    dir=""
done
exit $fail
