#!/usr/bin/env bash
# A shared library exports exactly its public API: every dynamic symbol it defines is a function
# declared ZS_API in its header, and every such function is exported. And it is the shipped build:
# no test hook (no ZS_TEST_ string: the hooks exist only in the tests' zshard_internal). And the
# zs_ symbols it needs from elsewhere are the public API of the library it sits on (USES_HEADER:
# libzshard_kernels uses zshard.h), none for libzshard: the libraries depend one way.
# Usage: test_exports.sh LIB_SO HEADER [USES_HEADER] (each a header, or headers joined by ':')
set -euo pipefail
lib=$1
header=$2
uses=${3:-}
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtDdBbRrVvWw]$/ { print $3 }' | sed 's/@.*//' |
  grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort -u)
declared=$(cat ${header//:/ } | grep -E '^ZS_API ' | sed -E 's/.*[ *](zs_[a-z0-9_]+)\(.*/\1/' | sort -u)
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
needed=$(nm -D --undefined-only "$lib" | awk '{ print $2 }' | sed 's/@.*//' | grep -E '^zs_' | sort -u || true)
allowed=""
if [ -n "$uses" ]; then
  allowed=$(cat ${uses//:/ } | grep -E '^ZS_API ' | sed -E 's/.*[ *](zs_[a-z0-9_]+)\(.*/\1/' | sort -u)
fi
foreign=$(comm -23 <(echo "$needed" | sed '/^$/d') <(echo "$allowed" | sed '/^$/d'))
if [ -n "$foreign" ]; then
  echo "FAIL: $lib needs zs_ symbols that are not the public API of ${uses:-any library it may use}:"
  echo "$foreign" | sed 's/^/  /'
fi
hooks=$(strings -a "$lib" | grep -E 'ZS_TEST_' || true)
if [ -n "$hooks" ]; then
  echo "FAIL: $lib contains test hook strings (the shipped library must have no hook):"
  echo "$hooks" | sed 's/^/  /'
fi
[ -z "$extra" ] && [ -z "$missing" ] && [ -z "$hooks" ] && [ -z "$foreign" ]
