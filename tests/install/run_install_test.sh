#!/usr/bin/env bash
# Installs tcomms and builds and runs its consumers from the installed prefix, outside Bazel:
#   tests/install/run_install_test.sh [--no-build]
#
#  1. tools/install.sh into a prefix with a space, twice (the same files both times);
#  2. every installed archive and the shared library define tc_* symbols only;
#  3. the ABI of the headers and libtcomms.so matches tools/abi/tcomms.abi, and a field inserted
#     in the middle of a public struct makes the check fail;
#  4. C: cc app.c $(pkg-config --cflags --libs --static tcomms), 4 ranks under the installed tcrun;
#  5. C++17 with CMake: find_package(tcomms), tcomms::tcomms (static) and tcomms::shared, 4 ranks;
#     ldd of the static one shows no libtcomms, libibverbs or CUDA library;
#  6. the transport alone (pkg-config tcomms-transport): the put/get/signal example, with no
#     runtime or API symbol in the binary;
#  7. tcomms (static) with Open MPI's libmpi and NCCL's libnccl in one binary, under mpirun;
#  8. without libibverbs (hidden in a mount namespace) the static consumer still runs, and the
#     installed tc-info says libibverbs is missing and finds the CUDA plugin beside it;
#  9. with --deb: tools/package_deb.sh, `apt-get install ./*.deb` into /usr, the C consumer built
#     with the system's pkg-config and run under /usr/bin/tcrun, then the packages removed.
# Exit status 0 only if every check passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=() deb=0
for arg in "$@"; do
    case $arg in
    --no-build) build=(--no-build) ;;
    --deb) deb=1 ;;
    *) echo "usage: $0 [--no-build] [--deb]" >&2; exit 2 ;;
    esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/pre fix"
failures=0
ok() { echo "ok: $*"; }
bad() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TC_SOCKET_IFNAME=lo

# ---- 1. install, twice
if ! tools/install.sh "${build[@]}" "$prefix" >"$tmp/install1.log" 2>&1; then
    cat "$tmp/install1.log" >&2
    bad "tools/install.sh"
    exit 1
fi
(cd "$prefix" && find . -type f -o -type l | sort | xargs -d '\n' md5sum 2>/dev/null) >"$tmp/files1"
tools/install.sh --no-build "$prefix" >"$tmp/install2.log" 2>&1 || bad "second install: $(tail -3 "$tmp/install2.log")"
(cd "$prefix" && find . -type f -o -type l | sort | xargs -d '\n' md5sum 2>/dev/null) >"$tmp/files2"
# Doxygen stamps its pages with the time: compare the HTML by name only.
if diff <(grep -v '/html/' "$tmp/files1") <(grep -v '/html/' "$tmp/files2") >/dev/null &&
    diff <(awk '{print $2}' "$tmp/files1") <(awk '{print $2}' "$tmp/files2") >/dev/null; then
    ok "installed twice into '$prefix': $(wc -l <"$tmp/files2") files, the same both times"
else
    bad "the second install differs: $(diff "$tmp/files1" "$tmp/files2" | head -5)"
fi
for f in include/tcomms/tcomms.h include/tcomms/transport/transport.h lib/libtcomms.a \
    lib/libtc_base.a lib/libtc_topo.a lib/libtc_transport.a lib/libtc_algo.a lib/libtc_kernels.a \
    lib/libtc_runtime.a lib/libtc_api.a lib/libtcomms.so lib/libtcomms.so.0 \
    lib/pkgconfig/tcomms.pc lib/pkgconfig/tcomms-transport.pc lib/cmake/tcomms/tcommsConfig.cmake \
    lib/cmake/tcomms/tcommsConfigVersion.cmake bin/tcrun bin/tcperf bin/tc-info bin/tc-fr \
    share/doc/tcomms/html/tcomms_8h.html; do
    [ -e "$prefix/$f" ] || bad "$f is not installed"
done
[ "$(readlink "$prefix/lib/libtcomms.so")" = libtcomms.so.0 ] || bad "libtcomms.so -> $(readlink "$prefix/lib/libtcomms.so")"

# ---- 2. exported symbols
for a in "$prefix"/lib/*.a; do
    others=$(nm -g --defined-only "$a" | awk 'NF == 3 { print $3 }' | grep -v '^tc_' | head -5)
    [ -z "$others" ] || bad "$(basename "$a") defines non-tc_ symbols: $others"
done
so="$prefix/lib/libtcomms.so.0"
others=$(nm -D --defined-only "$so" | awk '$2 != "A" { print $3 }' | grep -v '^tc_' | head -5)
[ -z "$others" ] || bad "libtcomms.so exports non-tc_ symbols: $others"
if nm -D --defined-only "$so" | grep -q ' tc_rt_'; then bad "libtcomms.so exports runtime internals"; fi
[ "$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" = libtcomms.so.0 ] || bad "soname"
ok "archives and libtcomms.so define tc_* only ($(nm -D --defined-only "$so" | grep -c ' tc_') exported)"

# ---- 3. the ABI record, and a deliberate break
if python3 tools/abi/abi_check.py --record tools/abi/tcomms.abi --include "$prefix/include" \
    --lib "$so" >"$tmp/abi.log" 2>&1; then
    ok "$(tail -1 "$tmp/abi.log")"
else
    cat "$tmp/abi.log" >&2
    bad "the ABI differs from tools/abi/tcomms.abi (see above)"
fi
if python3 tools/abi/abi_test.py >"$tmp/abi-self.log" 2>&1; then
    ok "the ABI tool's own test: $(tail -1 "$tmp/abi-self.log")"
else
    bad "tools/abi/abi_test.py: $(tail -10 "$tmp/abi-self.log")"
fi
cp -R "$prefix/include" "$tmp/include-broken"
sed -i 's|^\(    const char \*hints; .*hints.*\)$|\1\n    int tc_abi_probe; /* a field in the middle */|' \
    "$tmp/include-broken/tcomms/tcomms.h"
grep -q tc_abi_probe "$tmp/include-broken/tcomms/tcomms.h" || bad "could not insert the probe field"
python3 tools/abi/abi_check.py --record tools/abi/tcomms.abi --include "$tmp/include-broken" \
    --lib "$so" >"$tmp/abi-broken.log" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q "INCOMPATIBLE" "$tmp/abi-broken.log" &&
    grep -q "tc_comm_opts.timeout_ms: offset" "$tmp/abi-broken.log"; then
    ok "a field inserted in tc_comm_opts_t fails the ABI check: $(grep -m1 'struct tc_comm_opts' "$tmp/abi-broken.log")"
else
    cat "$tmp/abi-broken.log" >&2
    bad "the ABI check did not catch a field inserted in tc_comm_opts_t (exit $rc)"
fi

# ---- 4. C with pkg-config (eval: the prefix has a space, which pkg-config escapes)
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
tcrun="$prefix/bin/tcrun"
if eval "cc -std=c11 -Wall -Werror tests/install/c/app.c -o '$tmp/app_c' \
        $(pkg-config --cflags --libs --static tcomms)" 2>"$tmp/cc.log"; then
    if timeout 120 "$tcrun" -n 4 "$tmp/app_c" >"$tmp/c.out" 2>&1 && [ "$(grep -c 'elements right' "$tmp/c.out")" = 4 ]; then
        ok "C consumer (pkg-config --static tcomms): 4 ranks, every element right"
    else
        bad "C consumer under tcrun -n 4: $(tail -5 "$tmp/c.out")"
    fi
else
    bad "C consumer does not build: $(head -5 "$tmp/cc.log")"
fi

# ---- 5. C++17 with CMake, static and shared
if cmake -S tests/install/cmake -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$tmp/cmake" -j 2 >>"$tmp/cmake.log" 2>&1; then
    for app in app_static app_shared; do
        if timeout 120 "$tcrun" -n 4 "$tmp/cmake/$app" >"$tmp/$app.out" 2>&1 &&
            [ "$(grep -c 'broadcast right' "$tmp/$app.out")" = 4 ]; then
            ok "C++ consumer $app (CMake): 4 ranks right"
        else
            bad "C++ consumer $app under tcrun -n 4: $(tail -5 "$tmp/$app.out")"
        fi
    done
    deps=$(ldd "$tmp/cmake/app_static")
    if grep -Eq 'libtcomms|libibverbs|libcuda|libcudart|libnccl' <<<"$deps"; then
        bad "ldd app_static: $deps"
    else
        ok "ldd app_static: no libtcomms, libibverbs or CUDA library ($(grep -c '=>' <<<"$deps") libraries)"
    fi
    grep -q 'libtcomms.so.0 => .*pre fix/lib/libtcomms.so.0' <<<"$(ldd "$tmp/cmake/app_shared")" ||
        bad "app_shared does not load the installed libtcomms.so.0: $(ldd "$tmp/cmake/app_shared")"
else
    bad "CMake consumer: $(tail -15 "$tmp/cmake.log")"
fi

# ---- 6. the transport alone
if eval "cc -std=c11 -D_GNU_SOURCE -Wall -Werror docs/examples/transport_standalone.c \
        -o '$tmp/transport' $(pkg-config --cflags --libs --static tcomms-transport)" 2>"$tmp/tp.log"; then
    above=$(nm "$tmp/transport" | awk '{print $NF}' | grep -E '^tc_(rt_|comm_|all_reduce|algo_|kern_|topo_|boot_)' | head -5)
    [ -z "$above" ] || bad "the transport consumer contains symbols of other layers: $above"
    if timeout 90 docs/examples/transport_standalone_test.sh "$tmp/transport" >"$tmp/tp.out" 2>&1; then
        ok "transport alone (pkg-config tcomms-transport): put, signal, get and send/recv between 2 processes; no symbol of the layers above"
    else
        bad "transport example: $(tail -5 "$tmp/tp.out")"
    fi
else
    bad "transport consumer does not build: $(head -5 "$tmp/tp.log")"
fi

# ---- 7. with Open MPI and NCCL in one binary
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -e "$cuda/lib64/libnccl.so" ] || ! command -v mpicc >/dev/null; then
    bad "no NCCL at $cuda/lib64 or no mpicc: the mixed consumer cannot be built"
elif eval "mpicc -std=c11 -Wall -Werror tests/install/mix/mix.c -o '$tmp/mix' -I'$cuda/include' \
        $(pkg-config --cflags --libs --static tcomms) -L'$cuda/lib64' -Wl,-rpath,'$cuda/lib64' -lnccl" \
        2>"$tmp/mix.log"; then
    # no clash: none of tcomms' symbols is defined by libmpi or libnccl
    mpilib=$(ldd "$tmp/mix" | awk '/libmpi\.so/ {print $3}')
    clash=$(comm -12 <(nm -g --defined-only "$prefix/lib/libtcomms.a" | awk 'NF == 3 {print $3}' | sort -u) \
        <(nm -D --defined-only "$mpilib" "$cuda/lib64/libnccl.so" | awk 'NF == 3 {print $3}' | sort -u) | head -5)
    [ -z "$clash" ] || bad "symbols defined by tcomms and by libmpi/libnccl: $clash"
    if timeout 120 mpirun --oversubscribe -np 2 "$tmp/mix" >"$tmp/mix.out" 2>&1 &&
        [ "$(grep -c 'MPI and tcomms agree on 4097 elements; NCCL' "$tmp/mix.out")" = 2 ]; then
        ok "tcomms + libmpi + libnccl: $(grep -m1 'rank 0' "$tmp/mix.out")"
    else
        bad "mixed consumer under mpirun: $(tail -5 "$tmp/mix.out")"
    fi
else
    bad "mixed consumer does not build: $(head -5 "$tmp/mix.log")"
fi

# ---- 8. a machine without libibverbs: hide it in a mount namespace
verbs=$(readlink -f "$(ldconfig -p | awk '/libibverbs\.so\.1 / {print $NF; exit}')")
if [ ! -f "$verbs" ]; then
    bad "libibverbs.so.1 is not installed here: nothing to hide"
elif ! unshare -m true 2>/dev/null; then
    echo "note: unshare -m is not permitted here: the run without libibverbs is skipped"
else
    unshare -m bash -c "mount --bind /dev/null '$verbs' && '$prefix/bin/tc-info' && '$tmp/cmake/app_static'" \
        >"$tmp/noverbs.out" 2>&1
    if grep -q "libibverbs   not found: not loaded: .*libibverbs.so.1" "$tmp/noverbs.out" &&
        grep -q "rank 0 of 1: all-gather and broadcast right" "$tmp/noverbs.out"; then
        ok "without libibverbs: tc-info says '$(grep -m1 'libibverbs   not found' "$tmp/noverbs.out" | sed 's/^ *//')', the static consumer runs"
    else
        bad "without libibverbs: $(cat "$tmp/noverbs.out" | head -20)"
    fi
fi
"$prefix/bin/tc-info" >"$tmp/info.out" 2>&1
if [ -e "$prefix/lib/libtcomms_cuda.so" ]; then
    grep -q "cuda_plugin  found: $prefix/bin/../lib/libtcomms_cuda.so" "$tmp/info.out" &&
        ok "the installed tc-info finds the CUDA plugin: $(grep -A1 cuda_plugin "$tmp/info.out" | tail -1 | sed 's/^ *//')" ||
        bad "tc-info does not find the installed CUDA plugin: $(grep -A2 Libraries "$tmp/info.out")"
fi

# ---- 9. the Debian packages, installed into /usr and removed again
deb_test() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    tools/package_deb.sh --no-build "$tmp/debs" >"$tmp/deb.log" 2>&1 || {
        bad "package_deb.sh: $(tail -5 "$tmp/deb.log")"
        return
    }
    if dpkg-query -W libtcomms-dev tcomms-tools >/dev/null 2>&1; then
        bad "libtcomms-dev or tcomms-tools is already installed here: not touching it"
        return
    fi
    # shellcheck disable=SC2064
    trap "$sudo apt-get remove -y -qq libtcomms-dev tcomms-tools >/dev/null 2>&1; rm -rf '$tmp'" EXIT
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$tmp"/debs/*.deb \
        >>"$tmp/deb.log" 2>&1; then
        bad "apt-get install ./*.deb: $(tail -5 "$tmp/deb.log")"
        return
    fi
    local v
    v=$(env -u PKG_CONFIG_PATH pkg-config --modversion tcomms)
    if cc tests/install/c/app.c -o "$tmp/app_deb" \
        $(env -u PKG_CONFIG_PATH pkg-config --cflags --libs --static tcomms) 2>>"$tmp/deb.log" &&
        timeout 120 /usr/bin/tcrun -n 2 "$tmp/app_deb" >"$tmp/deb.out" 2>&1 &&
        [ "$(grep -c 'elements right' "$tmp/deb.out")" = 2 ] &&
        tc-info | grep -q "cuda_plugin  found: /usr/bin/../lib/libtcomms_cuda.so"; then
        ok "Debian packages $(cd "$tmp/debs" && echo *.deb): installed with apt, tcomms $v from /usr built and run under /usr/bin/tcrun"
    else
        bad "the consumer of the Debian packages: $(tail -5 "$tmp/deb.out" "$tmp/deb.log")"
    fi
    $sudo apt-get remove -y -qq libtcomms-dev tcomms-tools >>"$tmp/deb.log" 2>&1 || bad "apt-get remove"
    [ ! -e /usr/include/tcomms ] || bad "/usr/include/tcomms is left after the removal"
    trap 'rm -rf "$tmp"' EXIT
}
[ $deb -eq 0 ] || deb_test

echo "install tests: $failures failed"
[ $failures -eq 0 ]
