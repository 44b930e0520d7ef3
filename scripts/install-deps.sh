#!/usr/bin/env bash
# Installs the system packages zshard needs to build and test, and nothing that is already there.
#
# Idempotent: each package is checked with dpkg -s first; apt-get (update + install) runs only when
# something is missing. Works non-interactively as root on a fresh Debian 12 machine (and through
# sudo otherwise). It never installs CUDA (the build finds /usr/local/cuda when present) nor torch
# (the scripts that compare against PyTorch install it themselves).
#
# Usage: scripts/install-deps.sh [--dev]    --dev also installs clang-format and shellcheck.
#        scripts/install-deps.sh --list     prints the packages, one a line, and installs nothing.
set -euo pipefail

# Packages the build, the tests and the examples need.
packages=(
  build-essential cmake pkg-config git
  libopenmpi-dev openmpi-bin
  libhwloc-dev libjemalloc-dev libopenblas-dev libnuma-dev libcjson-dev libxxhash-dev
  liburing-dev # io_uring: the NVMe tier's reads and writes (src/offload/nvme_ring.c)
  python3
)

for arg in "$@"; do
  case "$arg" in
    --dev) packages+=(clang-format shellcheck) ;;
    --list)
      printf '%s\n' "${packages[@]}"
      exit 0
      ;;
    -h | --help)
      sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "install-deps.sh: unknown option '$arg' (use --dev or --help)" >&2
      exit 2
      ;;
  esac
done

# Prints the packages of the list that dpkg does not report as installed.
missing_packages() {
  local p
  for p in "${packages[@]}"; do
    if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
      printf '%s\n' "$p"
    fi
  done
}

if ! command -v dpkg >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps.sh: this script needs a Debian/Ubuntu system (dpkg + apt-get)." >&2
  echo "Install by hand: ${packages[*]}" >&2
  exit 1
fi

mapfile -t missing < <(missing_packages)
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "install-deps.sh: missing ${missing[*]}; run as root or install sudo" >&2
    exit 1
  fi
fi

echo "install-deps.sh: installing ${missing[*]}"
# Another apt-get (unattended upgrades, a colleague's install) may hold the dpkg lock: wait for it.
apt=("${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600)
"${apt[@]}" update
"${apt[@]}" install -y --no-install-recommends "${missing[@]}"

mapfile -t still < <(missing_packages)
if [ "${#still[@]}" -ne 0 ]; then
  echo "install-deps.sh: still missing after apt-get: ${still[*]}" >&2
  exit 1
fi
echo "install-deps.sh: done"
