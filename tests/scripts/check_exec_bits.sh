#!/usr/bin/env bash
# Every tracked file that starts with "#!" is executable in git (mode 100755): scripts are called
# by path (test.sh runs scripts/device-rehearsal.sh, the GPU machine runs scripts/device-first.sh),
# and a clean clone takes its modes from git, not from the working tree that wrote them.
# Usage: check_exec_bits.sh REPO. Exit 77 (skip) outside a git checkout.
set -euo pipefail
repo=${1:?usage: check_exec_bits.sh REPO}
cd "$repo"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "SKIP: $repo is not a git checkout"
  exit 77
fi
bad=0
checked=0
while read -r mode _ _ path; do
  [ -f "$path" ] || continue
  [ "$(head -c 2 "$path")" = '#!' ] || continue
  checked=$((checked + 1))
  if [ "$mode" != 100755 ]; then
    echo "not executable in git (mode $mode): $path  (fix: git update-index --chmod=+x $path)"
    bad=$((bad + 1))
  fi
done < <(git ls-files -s)
echo "$checked scripts with #!, $bad not executable"
[ "$bad" = 0 ]
