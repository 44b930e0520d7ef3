#!/usr/bin/env bash
# Formats every C/CUDA source and header of the repository with clang-format (.clang-format).
#
# Usage: scripts/format.sh           rewrite files in place
#        scripts/format.sh --check   change nothing; list unformatted files and exit 1 if any
# Only files git knows (tracked or untracked-but-not-ignored) are touched: build folders never are.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  -h | --help)
    sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "format.sh: unknown option '$1' (use --check)" >&2
    exit 2
    ;;
esac

if ! command -v clang-format >/dev/null 2>&1; then
  echo "format.sh: clang-format not found (scripts/install-deps.sh --dev installs it)" >&2
  exit 1
fi

mapfile -t files < <(git ls-files --cached --others --exclude-standard -- \
  '*.c' '*.h' '*.cu' '*.cuh' '*.cc' '*.cpp' | sort -u)
if [ "${#files[@]}" -eq 0 ]; then
  echo "format.sh: no C/CUDA files found"
  exit 0
fi

if [ "$check" = 0 ]; then
  clang-format -i "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi

bad=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "needs formatting: $f"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -ne 0 ]; then
  echo "format.sh: $bad of ${#files[@]} files need formatting (run scripts/format.sh)" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted correctly"
