#!/usr/bin/env bash
# A shared library exports exactly its public API: every dynamic symbol it defines is a function
# declared ZS_API in its header, and every such function is exported. And it is the shipped build:
# no test hook (no ZS_TEST_ string: the hooks exist only in the tests' zshard_internal).
# Usage: test_exports.sh LIBZSHARD_SO HEADER
set -euo pipefail
lib=$1
header=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtDdBbRrVvWw]$/ { print $3 }' | sed 's/@.*//' |
  grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u)
declared=$(grep -E '^ZS_API ' "$header" | sed -E 's/.*[ *](zs_[a-z0-9_]+)\(.*/\1/' | sort -u)
extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
echo "exports: $(echo "$exported" | wc -l) symbols, header declares $(echo "$declared" | wc -l)"
if [ -n "$extra" ]; then
  echo "FAIL: exported but not declared ZS_API in $header:"
  echo "$extra" | sed 's/^/  /'
fi
if [ -n "$missing" ]; then
  echo "FAIL: declared ZS_API but not exported:"
  echo "$missing" | sed 's/^/  /'
fi
hooks=$(strings -a "$lib" | grep -E 'ZS_TEST_' || true)
if [ -n "$hooks" ]; then
  echo "FAIL: $lib contains test hook strings (the shipped library must have no hook):"
  echo "$hooks" | sed 's/^/  /'
fi
[ -z "$extra" ] && [ -z "$missing" ] && [ -z "$hooks" ]
