#!/usr/bin/env bash
# Makes sure /usr/bin/python3 imports Hugging Face transformers and safetensors next to Debian's
# PyTorch (scripts/ensure-torch.sh): pip installs transformers 4.45.2 (the last release that
# supports PyTorch 1.13) and safetensors, with Debian's pip, when they are missing. Used by
# tests/gpt2/test_gpt2_ckpt.sh; exit 0 when both import afterwards.
set -u
PY=/usr/bin/python3
bash "$(dirname "$0")/ensure-torch.sh" || exit 1
if "$PY" -c "import transformers, safetensors" 2>/dev/null; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && SUDO="sudo -n" || { echo "ensure-transformers: not root and no sudo" >&2; exit 1; }
fi
if ! "$PY" -m pip --version >/dev/null 2>&1; then
  echo "ensure-transformers: installing python3-pip (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends python3-pip >/tmp/ensure-transformers.log 2>&1 ||
    { $SUDO apt-get update >>/tmp/ensure-transformers.log 2>&1 &&
      $SUDO apt-get install -y --no-install-recommends python3-pip >>/tmp/ensure-transformers.log 2>&1; }
fi
echo "ensure-transformers: pip install transformers==4.45.2 safetensors (for $PY)"
$SUDO "$PY" -m pip install --quiet --break-system-packages --disable-pip-version-check \
  "transformers==4.45.2" "safetensors>=0.4" >>/tmp/ensure-transformers.log 2>&1
if "$PY" -c "import transformers, safetensors" 2>/dev/null; then
  exit 0
fi
echo "ensure-transformers: installing transformers failed; see /tmp/ensure-transformers.log" >&2
tail -5 /tmp/ensure-transformers.log >&2
exit 1
