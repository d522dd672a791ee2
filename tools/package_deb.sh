#!/usr/bin/env bash
# Builds the Debian packages of tcomms from what tools/install.sh installs:
#   tools/package_deb.sh [--no-build] OUTDIR
#
#   OUTDIR/libtcomms-dev_VERSION_amd64.deb   headers, archives, libtcomms.so.MAJOR, the CUDA
#                                            plugin, pkg-config and CMake files (in /usr)
#   OUTDIR/tcomms-tools_VERSION_amd64.deb    tcrun, tcperf, tc-info, tc-sim, tc-tune, tc-kbench,
#                                            tc-tpbench, tc-fr and the documentation
# Install with `apt install ./OUTDIR/*.deb`. The pkg-config and CMake files find /usr from where
# they lie, so nothing is rewritten for the package.
set -euo pipefail
build=()
out=
for arg in "$@"; do
    case $arg in
    --no-build) build=(--no-build) ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "package_deb: unknown option $arg (try --help)" >&2; exit 2 ;;
    *) out=$arg ;;
    esac
done
[ -n "$out" ] || { echo "usage: tools/package_deb.sh [--no-build] OUTDIR" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
tools/install.sh "${build[@]}" "$stage/usr" >/dev/null
version=$(sed -n 's/^Version: //p' "$stage/usr/lib/pkgconfig/tcomms.pc")
arch=$(dpkg --print-architecture)
# The Debian packages that provide the shared libraries the programs and libtcomms.so load.
runtime_deps=$(dpkg-query -W -f='${Package} (>= ${Version}), ' libpmix2 libhwloc15 libsodium23 |
    sed 's/, $//')

package() { # NAME DESCRIPTION DEPENDS PATHS...
    local name=$1 desc=$2 deps=$3 root="$stage/$1"
    shift 3
    mkdir -p "$root/DEBIAN"
    for p in "$@"; do
        mkdir -p "$root/$(dirname "$p")"
        cp -a "$stage/$p" "$root/$p"
    done
    cat >"$root/DEBIAN/control" <<EOF
Package: $name
Version: $version
Architecture: $arch
Maintainer: tcomms developers <tcomms@localhost>
Section: libdevel
Priority: optional
Depends: $deps
Installed-Size: $(du -sk "$root" | cut -f1)
Description: $desc
 tcomms is a collective-communication library in C for large-scale
 distributed training: communicators, every collective, point-to-point,
 fault tolerance, over shared memory, TCP and InfiniBand.
EOF
    dpkg-deb --root-owner-group --build "$root" "$out/${name}_${version}_$arch.deb" >/dev/null
    echo "$out/${name}_${version}_$arch.deb"
}
package libtcomms-dev "collective communication for distributed training (development files)" \
    "$runtime_deps, libpmix-dev, libhwloc-dev, libsodium-dev" \
    usr/include usr/lib
package tcomms-tools "collective communication for distributed training (launcher and tools)" \
    "$runtime_deps, python3" \
    usr/bin usr/share
