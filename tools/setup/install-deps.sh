#!/usr/bin/env bash
# Installs every Debian package that building and testing tcomms needs.
# Idempotent: when everything is present it only checks and returns.
#   tools/setup/install-deps.sh [--bench] [--python]
# --bench adds the peers of bench/run_collectives.sh: Gloo (C++) and PyTorch (gloo backend).
# --python adds what the Python package and its tests need (Python 3.11's headers, venv) and
#   creates the virtual environment build/py-venv on Debian's /usr/bin/python3 without the
#   system's packages, with PyPI's torch, NumPy and pytest at the versions pinned below
#   (about 5.4 GB, a minute from PyPI; docs/python.md says why this torch).
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
  iproute2 util-linux    # ip, tc (tbf), unshare, nsenter: the virtual cluster (tests/cluster)
  doxygen graphviz       # public header documentation, warnings as errors
  procps psmisc          # pgrep/pkill/fuser used by the test scripts
  strace                 # tests/integration/syscall_check.sh counts system calls
  valgrind               # tests/integration/alloc_check.sh counts allocations
  cmake pkg-config       # consumers of the installed prefix (tests/install)
)

venv=""
for arg in "$@"; do
  case $arg in
    --bench) packages+=(libgloo-dev python3-torch) ;;  # bench/run_collectives.sh peers (/usr/bin/python3)
    --python) packages+=(python3-dev python3-venv)
              venv="$(cd "$(dirname "$0")/../.." && pwd)/build/py-venv" ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The Python tests' environment: Debian's interpreter (the extension builds against its
# headers) and these packages from PyPI, nothing from the system or PATH.
pins=(torch==2.15.0 numpy==2.4.6 pytest==9.2.0)
make_venv() {
  [ -n "$venv" ] || return 0
  # exits non-zero unless every pin is installed at its version and imports
  local check="import importlib.metadata as m, sys, torch, numpy, pytest
for pin in sys.argv[1:]:
    name, want = pin.split('==')
    have = m.version(name)
    if have != want: sys.exit(f'{name} is {have}, want {want}')"
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" "${pins[@]}" 2>/dev/null; then
    echo "install-deps: $venv present (${pins[*]})"
    return 0
  fi
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  # about 5 GB from PyPI: a failed install is tried again (wheels already fetched come from pip's cache)
  local try
  for try in 1 2 3; do
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --timeout 60 "${pins[@]}" && break
    if [ "$try" -eq 3 ]; then
      echo "install-deps: pip could not install ${pins[*]} into $venv in 3 tries (is PyPI reachable? see pip's messages above)" >&2
      # the environment takes about 6 GB, and pip's cache as much again
      df -h "$venv" "${XDG_CACHE_HOME:-$HOME/.cache}" >&2 2>/dev/null
      exit 1
    fi
    echo "install-deps: pip failed (try $try of 3); trying again in $((try * 10)) s" >&2
    sleep $((try * 10))
  done
  "$venv/bin/python" -c "$check" "${pins[@]}" || { echo "install-deps: $venv does not import ${pins[*]}" >&2; exit 1; }
  "$venv/bin/python" -c "import torch; print('install-deps: $venv: torch', torch.__version__)"
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  make_venv
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
make_venv
echo "install-deps: done"
