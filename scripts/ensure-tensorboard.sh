#!/usr/bin/env bash
# Finds or makes a Python that reads TensorBoard event files with TensorBoard's own reader
# (tensorboard.backend.event_processing.event_file_loader; no TensorFlow) and prints
# "PYTHON SITE_DIR" (the only line on stdout): run PYTHON with PYTHONPATH=SITE_DIR. Debian's
# /usr/bin/python3 with numpy (python3-numpy), and the tensorboard, protobuf and absl-py wheels
# installed with --no-deps into SITE_DIR (ZS_TB_SITE, default /var/tmp/zshard-tensorboard), away
# from the system's packages. Exit status: 0 found or installed; 77 not available and no registry
# reachable; 1 an install failed. Used by tests/gpt2/test_gpt2_tensorboard.sh.
set -u
# shellcheck source=scripts/python-with.sh
. "$(dirname "$0")/python-with.sh"
PY=/usr/bin/python3
SITE=${ZS_TB_SITE:-/var/tmp/zshard-tensorboard}
reader_ok() {
  PYTHONPATH=$SITE "$PY" -c "from tensorboard.backend.event_processing import event_file_loader" \
    >/dev/null 2>&1
}
if [ -x "$PY" ] && reader_ok; then
  echo "$PY $SITE"
  exit 0
fi
[ -x "$PY" ] || { echo "ensure-tensorboard: no /usr/bin/python3" >&2; exit 77; }
SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && SUDO="sudo -n" || { echo "ensure-tensorboard: not root and no sudo" >&2; exit 1; }
fi
if ! zs_install_lock; then
  echo "ensure-tensorboard: could not take the install lock" >&2
  exit 1
fi
if reader_ok; then
  echo "$PY $SITE"
  exit 0
fi
log=/tmp/ensure-tensorboard.log
export DEBIAN_FRONTEND=noninteractive
if ! "$PY" -c "import numpy" >/dev/null 2>&1 || ! "$PY" -m pip --version >/dev/null 2>&1; then
  zs_registry_reachable apt || { echo "ensure-tensorboard: no numpy or pip, and no registry" >&2; exit 77; }
  echo "ensure-tensorboard: installing python3-numpy python3-pip (apt-get)" >&2
  $SUDO apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends python3-numpy \
    python3-pip >"$log" 2>&1 9<&-
fi
if ! zs_registry_reachable pip "$PY"; then
  echo "ensure-tensorboard: the Python package registry cannot be reached" >&2
  exit 77
fi
echo "ensure-tensorboard: pip install --target $SITE tensorboard protobuf absl-py (no deps)" >&2
$SUDO "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --target "$SITE" \
  tensorboard protobuf absl-py >>"$log" 2>&1 9<&-
if reader_ok; then
  echo "$PY $SITE"
  exit 0
fi
echo "ensure-tensorboard: installing the reader failed; see $log" >&2
tail -5 "$log" >&2
exit 1
