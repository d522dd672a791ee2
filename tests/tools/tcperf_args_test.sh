#!/usr/bin/env bash
# tcperf's refusals say why (some printed only the usage), and a size that holds no whole
# element is refused (it ran a row of 0 elements and exited 0).
set -uo pipefail
tcperf=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() { # refused WORDS ARGS...: status 2 and WORDS on stderr
    local words=$1 err
    shift
    err=$("$tcperf" "$@" 2>&1 >/dev/null)
    [ $? = 2 ] || fail "tcperf $*: not refused"
    grep -qF -- "$words" <<<"$err" || fail "tcperf $*: '$words' not in: $err"
}
refused "-b is larger than -e" -b 64 -e 8
refused "-i 0: the step must be at least 1 byte" -i 0
refused "-b 7 -e 7: not one whole float64 (8 bytes)" -b 7 -e 7 -d float64
refused "an argument that is not an option: stray" -n 5 stray
refused "--coll bogus: not a collective" --coll bogus
refused "-f and -i both given" -f 2 -i 8
refused "-f and -i both given" -i 8 -f 2
echo PASS
