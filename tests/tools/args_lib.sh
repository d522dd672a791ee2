# What the tools' argument tests share. Source it from the runfiles root with the tool's path
# and the name its messages give:  . tests/tools/args_lib.sh TOOL NAME
tool=$1
name=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() { # refused WORDS ARGS...: status 2, WORDS on stderr, nothing on stdout
    local words=$1 out err
    shift
    err=$("$tool" "$@" 2>&1 >"${TEST_TMPDIR:-/tmp}/$name.out")
    [ $? = 2 ] || fail "$name $*: not refused with status 2: $err"
    grep -qF -- "$words" <<<"$err" || fail "$name $*: '$words' not in: $err"
    out=$(cat "${TEST_TMPDIR:-/tmp}/$name.out")
    [ -z "$out" ] || fail "$name $*: refused but printed: $out"
}
