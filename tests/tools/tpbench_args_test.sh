#!/usr/bin/env bash
# tc-tpbench's refusals name the option and the accepted range, all with status 2: -b 0,
# -b above -e, -f 1, -n 0 and -w 0 got only "bad arguments or backend", -b -1 status 1,
# -w 100000 was accepted (at least that many messages of every size), and --memcpy -e 0
# printed an empty table with status 0. Nothing here runs a measurement.
set -uo pipefail
tpbench=$1
. tests/tools/args_lib.sh "$tpbench" tc-tpbench || exit 1 # else every refusal "passes"
refused "-b 0: a message must be at least 1 byte" -b 0
refused "-b 64 is larger than -e 8" -b 64 -e 8
refused '-b="-1": not a size' -b -1
refused '-f="1": out of range (accepted: integers in [2, 1024])' -f 1
refused '-n="0": out of range (accepted: integers in [1, ' -n 0
refused '-w="0": out of range (accepted: integers in [1, 1024])' -w 0
refused '-w="100000": out of range (accepted: integers in [1, 1024])' -w 100000
refused "--memcpy -e 0: the memcpy table starts at 4096 bytes" --memcpy -e 0
refused "--memcpy takes -e only, not -b" --memcpy -b 8 -e 64M
refused "-t bogus: no transport backend named 'bogus'" -t bogus
refused "unexpected argument 'stray'" -b 8 stray
refused "unknown option -x" -x 1
refused "-e needs a value" -e
echo PASS
