#!/usr/bin/env bash
# tc-kbench's refusals say why, with status 2: negative numbers were read modulo 2^64 and run
# (-r -1 as 101 repetitions, -n -1, -f -2), -r above 101 was clamped in silence, an empty -t or
# a type that no size holds whole printed an empty table and exited 0, and -b -1, -b above -e,
# -f 1 and a stray argument printed only the usage. Nothing here runs a measurement.
set -uo pipefail
kbench=$1
. tests/tools/args_lib.sh "$kbench" tc-kbench || exit 1 # else every refusal "passes"
refused '-r="-1": out of range (accepted: integers in [1, 101])' -e 4K -t float32 -r -1
refused '-r="102": out of range (accepted: integers in [1, 101])' -e 4K -t float32 -r 102
refused '-r="0": out of range' -r 0
refused '-n="-1": out of range (accepted: integers in [1, ' -n -1
refused '-f="-2": out of range (accepted: integers in [2, 1024])' -f -2
refused '-f="1": out of range (accepted: integers in [2, 1024])' -f 1
refused "-t '': no type given" -t ''
refused "-t ',': no type given" -t ,
refused "-o ',': no op given" -o ,
refused "-t float32: no size from -b 3 to -e 3 (factor 4) holds whole float32 elements (4 bytes)" \
    -b 3 -e 3 -t float32
refused "-t float64: no size from -b 4 to -e 4 (factor 4) holds whole float64" -b 4 -e 4 -t int32,float64
refused '-b="-1": not a size' -b -1
refused "-b 0: an array must be at least 1 byte" -b 0
refused "-b 65536 is larger than -e 4096" -b 64K -e 4K
refused "an argument that is not an option: stray" -e 4K stray
# found by an independent checker: a bitwise op on a float type printed the header, then exit 1
# and no row; --help was "invalid option -- '-'"
refused "-o band does not apply to -t float32 (bitwise ops: integer types only)" \
    -b 4096 -e 4096 -n 1 -r 1 -t float32,int32 -o band,sum
help=$("$kbench" --help 2>&1) || fail "tc-kbench --help: status $?: $help"
grep -qF "usage: tc-kbench" <<<"$help" || fail "tc-kbench --help: no usage in: $help"
echo PASS
