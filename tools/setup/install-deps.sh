#!/usr/bin/env bash
# Installs every Debian package that building and testing tcomms needs.
# Idempotent: when everything is present it only checks and returns.
#   tools/setup/install-deps.sh [--bench]
# --bench adds the peers of bench/run_collectives.sh: Gloo (C++) and PyTorch (gloo backend).
set -euo pipefail

packages=(
  bazel-bootstrap        # Bazel 4.2.3, used offline (see third_party/)
  build-essential clang lld libclang-rt-14-dev  # gcc, clang (layering_check, sanitizers, libFuzzer)
  clang-tidy cppcheck    # static analysis (tools/ci/static_analysis.sh)
  libpmix-dev            # PMIx client + server API (runtime bootstrap, tcrun)
  libhwloc-dev           # topology discovery
  libibverbs-dev         # InfiniBand verbs (built; no hardware here)
  libcmocka-dev          # unit tests
  libsodium-dev          # HMAC-SHA-256, random nonces, constant-time compare (connection authentication)
  openmpi-bin libopenmpi-dev  # mpirun launcher + side-by-side peer
  slurm-wlm              # srun --mpi=pmix launcher (one-node cluster in tests)
  doxygen graphviz       # public header documentation, warnings as errors
  procps psmisc          # pgrep/pkill/fuser used by the test scripts
  strace                 # tests/integration/syscall_check.sh counts system calls
  cmake pkg-config       # consumers of the installed prefix (tests/install)
)

for arg in "$@"; do
  case $arg in
    --bench) packages+=(libgloo-dev python3-torch) ;;  # bench/run_collectives.sh peers
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
