#!/usr/bin/env bash
# scripts/ensure-torch.sh and scripts/ensure-transformers.sh as on the GPU machine (no network, no
# package registry), in a mount + network namespace of their own:
#   1. no Python imports torch (/usr/bin/python3 and python3 on PATH are stand-ins that import
#      nothing): both scripts exit 77 (skip) within 90 s, without trying to install anything;
#   2. /usr/bin/python3 lacks torch but python3 on PATH has it (the GPU machine's PyTorch venv):
#      both print that python3's path and exit 0.
# usage: test_ensure_offline.sh SOURCE_DIR
set -u
SRC=$1
if [ "$(id -u)" != 0 ] || ! unshare -m -n true 2>/dev/null; then
  echo "SKIP: cannot make a mount + network namespace here"
  exit 77
fi
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/none" "$W/venv"
printf '#!/bin/sh\nexit 1\n' >"$W/none/python3"                 # imports nothing
printf '#!/bin/sh\n[ "$1" = -c ] && exit 0\nexit 1\n' >"$W/venv/python3" # imports anything
chmod +x "$W/none/python3" "$W/venv/python3"
pass=0
fail=0
# offline PATHDIR SCRIPT: runs SCRIPT with /usr/bin/python3 replaced by the stand-in that imports
# nothing, PATHDIR first on PATH, and no network; prints "rc seconds", stdout to $W/out.
offline() {
  local t0=$SECONDS rc
  unshare -m -n bash -c 'mount --bind "$1/none/python3" /usr/bin/python3 && shift &&
    PATH="$1:$PATH" exec bash "$2"' _ "$W" "$1" "$SRC/scripts/$2.sh" >"$W/out" 2>"$W/err"
  rc=$?
  echo "$rc $((SECONDS - t0))"
}
for s in ensure-torch ensure-transformers; do
  read -r rc dt < <(offline "$W/none" "$s")
  if [ "$rc" = 77 ] && [ "$dt" -le 90 ] && ! grep -qi 'installing' "$W/err"; then
    echo "ok   $s without torch and offline: skip (77) after $dt s, nothing installed"
    pass=$((pass + 1))
  else
    echo "FAIL $s without torch and offline: exit $rc after $dt s (want 77, <= 90 s, no install)"
    sed 's/^/     /' "$W/err"
    fail=$((fail + 1))
  fi
  read -r rc dt < <(offline "$W/venv" "$s")
  if [ "$rc" = 0 ] && [ "$(cat "$W/out")" = "$W/venv/python3" ]; then
    echo "ok   $s finds python3 on PATH when /usr/bin/python3 lacks torch"
    pass=$((pass + 1))
  else
    echo "FAIL $s with torch only on PATH: exit $rc, printed '$(cat "$W/out")' (want $W/venv/python3)"
    sed 's/^/     /' "$W/err"
    fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
