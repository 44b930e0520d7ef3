#!/usr/bin/env bash
# Finds a Python that imports PyTorch, Hugging Face transformers and safetensors and prints its
# path (the only line on stdout), like scripts/ensure-torch.sh. When the Python with PyTorch lacks
# them and it is Debian's /usr/bin/python3, pip installs transformers 4.45.2 (the last release
# that supports PyTorch 1.13) and safetensors with Debian's pip.
# Exit status: 0 found or installed; 77 not available and no registry reachable (decided within
# about a minute, nothing tried); 1 an install failed. Used by tests/gpt2/test_gpt2_ckpt.sh.
set -u
# shellcheck source=scripts/python-with.sh
. "$(dirname "$0")/python-with.sh"
if zs_python_with torch numpy transformers safetensors; then
  exit 0
fi
PY=$(bash "$(dirname "$0")/ensure-torch.sh")
rc=$?
[ $rc -eq 0 ] || exit $rc
if [ "$PY" != /usr/bin/python3 ]; then
  echo "ensure-transformers: $PY has torch but not transformers and safetensors (install them there)" >&2
  exit 77
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && SUDO="sudo -n" || { echo "ensure-transformers: not root and no sudo" >&2; exit 1; }
fi
# One install at a time (tests run in parallel; ensure-torch.sh above has released its lock):
# whoever waited finds what the first installed.
if ! zs_install_lock; then
  echo "ensure-transformers: could not take the install lock" >&2
  exit 1
fi
if ZS_PYTHON=$PY zs_python_with torch numpy transformers safetensors >/dev/null; then
  echo "$PY"
  exit 0
fi
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  zs_registry_reachable apt || { echo "ensure-transformers: no pip and no registry" >&2; exit 77; }
  echo "ensure-transformers: installing python3-pip (apt-get)" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends python3-pip >/tmp/ensure-transformers.log 2>&1 9<&-
fi
if ! zs_registry_reachable pip "$PY"; then
  echo "ensure-transformers: the Python package registry cannot be reached" >&2
  exit 77
fi
echo "ensure-transformers: pip install transformers==4.45.2 safetensors (for $PY)" >&2
$SUDO "$PY" -m pip install --quiet --break-system-packages --disable-pip-version-check \
  "transformers==4.45.2" "safetensors>=0.4" >>/tmp/ensure-transformers.log 2>&1 9<&-
if ZS_PYTHON=$PY zs_python_with torch numpy transformers safetensors; then
  exit 0
fi
echo "ensure-transformers: installing transformers failed; see /tmp/ensure-transformers.log" >&2
tail -5 /tmp/ensure-transformers.log >&2
exit 1
