#!/usr/bin/env bash
# Shared by scripts/ensure-torch.sh and scripts/ensure-transformers.sh (sourced): finding a Python
# that imports given modules, and telling whether a package registry can be reached at all.
#
#   zs_python_with MOD...    prints the first Python that imports every MOD: $ZS_PYTHON alone when
#                            set, else /usr/bin/python3, then python3 on PATH; returns 1 if none
#   zs_registry_reachable apt|pip
#                            returns 0 when that registry answers within ~20 s, 1 when not (no
#                            network, as on the GPU machine; no client); ZS_OFFLINE=1 forces 1
#   zs_install_lock          takes (on fd 9, held until the calling script exits) the lock that
#                            serializes the installs of every ensure-*.sh on this machine: ctest
#                            runs tests in parallel, and two apt-get or pip runs at once fail on
#                            dpkg's lock. Waits up to 30 minutes; returns 1 when it cannot. The
#                            installers run with 9<&- so that nothing they leave behind holds it.

zs_python_with() {
  local py mods cands=()
  mods=$(IFS=,; echo "$*")
  if [ -n "${ZS_PYTHON:-}" ]; then
    cands=("$ZS_PYTHON")
  else
    cands=(/usr/bin/python3 "$(command -v python3 2>/dev/null || true)")
  fi
  for py in "${cands[@]}"; do
    if [ -z "$py" ] || [ ! -x "$py" ]; then continue; fi
    if "$py" -c "import $mods" >/dev/null 2>&1; then
      echo "$py"
      return 0
    fi
  done
  return 1
}

zs_registry_reachable() {
  [ "${ZS_OFFLINE:-0}" = 1 ] && return 1
  case "$1" in
    apt)
      command -v apt-get >/dev/null || return 1
      # The index update fails at once without a network (no name resolution) and within the
      # timeouts when packets go nowhere; --error-on=any makes a failed fetch an error.
      timeout 60 apt-get -q -o Acquire::Retries=0 -o Acquire::http::Timeout=10 \
        -o Acquire::https::Timeout=10 update --error-on=any >/dev/null 2>&1 9<&-
      ;;
    pip)
      local py=${2:-python3}
      timeout 60 "$py" -m pip index versions pip --timeout 10 --retries 0 \
        --disable-pip-version-check >/dev/null 2>&1
      ;;
    *) return 1 ;;
  esac
}

zs_install_lock() {
  # One path for every caller whatever its TMPDIR; opened read-only (a lock file another user
  # made in sticky /tmp may not be writable), made world-readable by whoever creates it.
  local f=/tmp/zshard-ensure-install.lock
  [ -e "$f" ] || (umask 000 && : >>"$f") 2>/dev/null || true
  exec 9<"$f" || return 1
  flock -w 1800 9
}
