#!/usr/bin/env bash
# Finds a Python that imports PyTorch and numpy and prints its path (the only line on stdout):
# $ZS_PYTHON when set, else /usr/bin/python3, else python3 on PATH (the GPU machine's, with
# PyTorch 2.x). When none does, installs Debian's python3-torch (1.13) with apt-get (needs root
# and Debian's registry) and prints /usr/bin/python3.
# Exit status: 0 found or installed; 77 none, and no registry can be reached (no network: the GPU
# machine), decided within about a minute without trying to install; 1 the install failed.
# Used by tests/gpt2/test_gpt2_ref.sh, bench/train_cpu.sh, scripts/ensure-transformers.sh.
set -u
# shellcheck source=scripts/python-with.sh
. "$(dirname "$0")/python-with.sh"
if zs_python_with torch numpy; then
  exit 0
fi
if [ -n "${ZS_PYTHON:-}" ] && [ "$ZS_PYTHON" != /usr/bin/python3 ]; then
  echo "ensure-torch: $ZS_PYTHON (ZS_PYTHON) cannot import torch and numpy" >&2
  exit 77
fi
# One install at a time (tests run in parallel); whoever waited finds what the first installed.
if ! zs_install_lock; then
  echo "ensure-torch: could not take the install lock" >&2
  exit 1
fi
if zs_python_with torch numpy; then
  exit 0
fi
if ! zs_registry_reachable apt; then
  echo "ensure-torch: no Python here imports torch and Debian's package registry cannot be reached" >&2
  exit 77
fi
echo "ensure-torch: /usr/bin/python3 cannot import torch; installing python3-torch (apt-get)" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && SUDO="sudo -n" || { echo "ensure-torch: not root and no sudo" >&2; exit 1; }
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends python3-torch python3-numpy >/tmp/ensure-torch.log 2>&1 9<&-
if ZS_PYTHON=/usr/bin/python3 zs_python_with torch numpy; then
  echo "ensure-torch: $(/usr/bin/python3 -c 'import torch; print("torch", torch.__version__)') installed" >&2
  exit 0
fi
echo "ensure-torch: installing python3-torch failed; see /tmp/ensure-torch.log" >&2
tail -5 /tmp/ensure-torch.log >&2
exit 1
