#!/usr/bin/env bash
# Makes sure Debian's PyTorch (python3-torch, 1.13) and numpy import under /usr/bin/python3,
# installing them with apt-get when missing (needs root and Debian's package registry).
# Used by tests/gpt2/test_gpt2_ref.sh; prints what it does; exit 0 when torch imports afterwards.
set -u
PY=/usr/bin/python3
if "$PY" -c "import torch, numpy" 2>/dev/null; then
  exit 0
fi
echo "ensure-torch: /usr/bin/python3 cannot import torch; installing python3-torch (apt-get)"
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && SUDO="sudo -n" || { echo "ensure-torch: not root and no sudo" >&2; exit 1; }
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y --no-install-recommends python3-torch python3-numpy >/tmp/ensure-torch.log 2>&1 ||
  { $SUDO apt-get update >>/tmp/ensure-torch.log 2>&1 &&
    $SUDO apt-get install -y --no-install-recommends python3-torch python3-numpy >>/tmp/ensure-torch.log 2>&1; }
if "$PY" -c "import torch, numpy" 2>/dev/null; then
  echo "ensure-torch: $("$PY" -c 'import torch; print("torch", torch.__version__)') installed"
  exit 0
fi
echo "ensure-torch: installing python3-torch failed; see /tmp/ensure-torch.log" >&2
tail -5 /tmp/ensure-torch.log >&2
exit 1
