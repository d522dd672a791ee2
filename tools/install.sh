#!/usr/bin/env bash
# Installs tcomms for builds outside Bazel (CMake, Make, pkg-config):
#   tools/install.sh [--no-build] PREFIX
#
#   PREFIX/include/tcomms/        public headers of every layer a program may take alone
#                                 (base, topo, transport, algo, kernels, and tcomms.h)
#   PREFIX/lib/libtcomms.a        every layer in one position-independent archive
#   PREFIX/lib/libtc_<layer>.a    one archive per layer: base topo transport algo kernels runtime api
#   PREFIX/lib/libtcomms.so.M.m.p the shared library (soname libtcomms.so.M, and libtcomms.so),
#                                 exporting the functions of the public headers and nothing else
#   PREFIX/lib/libtcomms_cuda.so  the CUDA kernels plugin, opened at run time (toolkit builds)
#   PREFIX/lib/pkgconfig/         tcomms.pc (the archive), tcomms-shared.pc, tcomms-transport.pc
#   PREFIX/lib/cmake/tcomms/      tcomms::tcomms (static), tcomms::shared, tcomms::transport
#   PREFIX/bin/                   tcrun tcperf tc-info tc-sim tc-tune tc-kbench tc-tpbench tc-fr
#   PREFIX/share/doc/tcomms/      README.md, the Doxygen HTML of the public API (html/)
#
# --no-build takes what `bazel build` left in bazel-bin. Installing again over the same prefix
# replaces every file; PREFIX may contain spaces. The files are relocatable: pkg-config and CMake
# files find the prefix from where they are.
set -euo pipefail
build=1
prefix=
for arg in "$@"; do
    case $arg in
    --no-build) build=0 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "install: unknown option $arg (try --help)" >&2; exit 2 ;;
    *) [ -z "$prefix" ] || { echo "install: one PREFIX only" >&2; exit 2; }; prefix=$arg ;;
    esac
done
[ -n "$prefix" ] || { echo "usage: tools/install.sh [--no-build] PREFIX" >&2; exit 2; }
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
cd "$(dirname "$0")/.."

hdr=api/include/tcomms/tcomms.h
ver() { sed -n "s/^#define TC_VERSION_$1 \([0-9]\+\)$/\1/p" "$hdr"; }
major=$(ver MAJOR) minor=$(ver MINOR) patch=$(ver PATCH)
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] ||
    { echo "install: no TC_VERSION_MAJOR/MINOR/PATCH in $hdr" >&2; exit 1; }
version=$major.$minor.$patch

# The archives of each layer (bazel-bin paths) and the folders of its public headers.
declare -A layer_libs=(
    [base]="base/libtc_base.a"
    [topo]="topo/libtc_topo.a"
    [transport]="transport/libtc_transport.a transport/self/libtc_transport_self.a
        transport/shm/libtc_transport_shm.a transport/tcp/libtc_transport_tcp.a
        transport/ib/libtc_transport_ib.a transport/builtin/libtc_transport_builtin.a"
    [algo]="algo/libtc_algo.a"
    [kernels]="kernels/libtc_kernels.a kernels/cuda/libtc_kernels_cuda.a"
    [runtime]="runtime/libtc_runtime.a"
    [api]="api/libtcomms.a"
)
layers=(base topo transport algo kernels runtime api)
header_dirs=(base topo transport transport/self transport/shm transport/ib transport/builtin
    algo kernels kernels/cuda api)
tools=(tools/tcrun/tcrun tools/tcperf/tcperf tools/tc-info/tc-info tools/tc-sim/tc-sim tools/tc-tune/tc-tune
    tools/tc-kbench/tc-kbench tools/tc-tpbench/tc-tpbench)
# What the archives need from the system (libibverbs and CUDA are opened at run time).
sys_libs="-lpmix -lhwloc -lsodium -ldl -lpthread -lrt -lm"

if [ $build -eq 1 ]; then
    # every layer's library by name: Bazel writes a library's archive only when it is asked for
    bazel build //base:tc_base //topo:tc_topo //transport/... //algo:tc_algo //kernels/... \
        //runtime:tc_runtime //api:tcomms //tools/...
fi
bin=$(bazel info bazel-bin 2>/dev/null)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/include" "$stage/lib/pkgconfig" "$stage/lib/cmake/tcomms" "$stage/bin" \
    "$stage/share/doc/tcomms"

# ---- headers
for d in "${header_dirs[@]}"; do
    cp -R "$d/include/tcomms" "$stage/include/"
done
# The shm segment's layout is a wire format between two processes of the same build (it has its
# own version), not an interface: the tests include it, programs do not. The same holds for its
# lanes (shm_lane.h), which only the runtime's small-message path uses.
rm "$stage/include/tcomms/transport/shm_layout.h" "$stage/include/tcomms/transport/shm_lane.h"

# ---- archives: one per layer, then all of them in one (ar's MRI script keeps every member,
# also those of the same name in two libraries).
merge() { # OUT IN...
    local out=$1 script
    shift
    script="CREATE $out"$'\n'
    for a in "$@"; do
        [ -f "$a" ] || { echo "install: $a is missing: build first" >&2; return 1; }
        script+="ADDLIB $a"$'\n'
    done
    ar -M <<<"${script}SAVE"$'\n'"END" && ranlib "$out"
}
all=()
for l in "${layers[@]}"; do
    ins=()
    for a in ${layer_libs[$l]}; do ins+=("$bin/$a"); done
    merge "$stage/lib/libtc_$l.a" "${ins[@]}"
    all+=("$stage/lib/libtc_$l.a")
done
merge "$stage/lib/libtcomms.a" "${all[@]}"

# ---- the shared library exports what the installed headers declare and the archive defines:
# the public tc_* functions of every layer; the runtime's internals stay local.
grep -rhoE '\btc_[A-Za-z0-9_]+\b' "$stage/include" | sort -u >"$stage/named"
nm -g --defined-only "$stage/lib/libtcomms.a" | awk 'NF == 3 { print $3 }' | sort -u >"$stage/defined"
{
    echo "TCOMMS_$major {"
    echo "    global:"
    comm -12 "$stage/named" "$stage/defined" | sed 's/.*/        &;/'
    echo "    local: *;"
    echo "};"
} >"$stage/tcomms.map"
so=libtcomms.so.$version
cc -shared -o "$stage/lib/$so" -Wl,-soname,libtcomms.so.$major \
    -Wl,--version-script="$stage/tcomms.map" -Wl,-z,defs \
    -Wl,--whole-archive "$stage/lib/libtcomms.a" -Wl,--no-whole-archive $sys_libs
ln -s "$so" "$stage/lib/libtcomms.so.$major"
ln -s "libtcomms.so.$major" "$stage/lib/libtcomms.so"
if [ -f "$bin/kernels/cuda/libtcomms_cuda.so" ]; then
    cp "$bin/kernels/cuda/libtcomms_cuda.so" "$stage/lib/"
fi

# ---- pkg-config: relocatable through ${pcfiledir}
pc() { # NAME DESCRIPTION LIBS LIBS_PRIVATE
    cat >"$stage/lib/pkgconfig/$1.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $2
Version: $version
URL: https://github.com/tcomms/tcomms
Libs: -L\${libdir} $3
Libs.private: $4
Cflags: -I\${includedir}
EOF
}
pc tcomms "collective communication for distributed training (static archive; link with --static)" \
    "-l:libtcomms.a" "$sys_libs"
pc tcomms-shared "collective communication for distributed training (shared library)" \
    "-ltcomms" "$sys_libs"
pc tcomms-transport "the tcomms transport layer alone: self, shm, tcp, ib (static archive)" \
    "-l:libtc_transport.a -l:libtc_base.a" "-lsodium -ldl -lpthread -lrt"

# ---- CMake package
sed -e "s/@VERSION@/$version/g" -e "s/@MAJOR@/$major/g" tools/install/tcommsConfig.cmake.in \
    >"$stage/lib/cmake/tcomms/tcommsConfig.cmake"
sed -e "s/@VERSION@/$version/g" tools/install/tcommsConfigVersion.cmake.in \
    >"$stage/lib/cmake/tcomms/tcommsConfigVersion.cmake"

# ---- programs and documentation
for t in "${tools[@]}"; do cp "$bin/$t" "$stage/bin/"; done
cp tools/tc-fr/tc-fr "$stage/bin/"
cp README.md "$stage/share/doc/tcomms/"
if command -v doxygen >/dev/null; then
    (cat docs/Doxyfile && echo "OUTPUT_DIRECTORY = $stage/doxygen") | doxygen - >/dev/null
    cp -R "$stage/doxygen/html" "$stage/share/doc/tcomms/"
else
    echo "install: doxygen not found: no HTML documentation" >&2
fi

# ---- into PREFIX: files replaced, never merged with an older install's (Bazel's outputs are
# read-only: made writable so that the next install can replace them)
chmod -R u+w "$stage"
rm -rf "$prefix/include/tcomms" "$prefix/lib/cmake/tcomms" "$prefix/share/doc/tcomms"
rm -f "$prefix"/lib/libtcomms.so* "$prefix"/lib/libtc_*.a
for d in include lib bin share; do
    mkdir -p "$prefix/$d"
    cp -R "$stage/$d/." "$prefix/$d/"
done
echo "install: tcomms $version in $prefix"
