#!/usr/bin/env bash
# cmake/ZsNccl.cmake picks NCCL as the GPU machine may hold it, checked with fake installations
# (empty files: only the finding is under test): NCCL_ROOT over NCCL_HOME over the pip wheel
# (site-packages/nvidia/nccl with libnccl.so.2 only) over the toolkit; a root holding the library
# without nccl.h (or the reverse) is skipped whole, never mixed with another root's half; the
# link flag names libnccl.so.2 where there is no libnccl.so. Usage: test_find_nccl.sh REPO
set -uo pipefail
repo=${1:?usage: test_find_nccl.sh REPO}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mk() { # mk DIR LIBNAME [noheader]
  mkdir -p "$t/$1/lib" && touch "$t/$1/lib/$2"
  [ "${3:-}" = noheader ] || { mkdir -p "$t/$1/include" && touch "$t/$1/include/nccl.h"; }
}
mk half libnccl.so.2 noheader
mk full libnccl.so.2
mk other libnccl.so
mk site/nvidia/nccl libnccl.so.2
mkdir -p "$t/src"
cat >"$t/src/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.21)
project(find_nccl NONE)
include($repo/cmake/ZsNccl.cmake)
message(STATUS "FOUND|\${ZS_NCCL_LIB}|\${ZS_NCCL_INC}|\${ZS_NCCL_LINK_FLAG}")
CM
fails=0
n=0
check() { # check WHAT EXPECT_LIB EXPECT_INC EXPECT_FLAG -- env/cmake arguments
  local what=$1 lib=$2 inc=$3 flag=$4 got
  shift 5
  rm -rf "$t/b"
  got=$(env -u NCCL_ROOT -u NCCL_HOME "$@" 2>&1 | sed -n 's/.*FOUND|//p')
  n=$((n + 1))
  if [ "$got" = "$lib|$inc|$flag" ]; then
    echo "ok   $what"
  else
    echo "FAIL $what: got '$got', want '$lib|$inc|$flag'"
    fails=$((fails + 1))
  fi
}
C=(cmake -S "$t/src" -B "$t/b")
check "NCCL_ROOT wins over NCCL_HOME" "$t/other/lib/libnccl.so" "$t/other/include" -lnccl -- \
  NCCL_HOME="$t/full" "${C[@]}" -DNCCL_ROOT="$t/other"
check "a root without nccl.h is skipped, not mixed" "$t/full/lib/libnccl.so.2" "$t/full/include" \
  -l:libnccl.so.2 -- NCCL_HOME="$t/full" "${C[@]}" -DNCCL_ROOT="$t/half"
check "the wheel of python3's sys.path" "$t/site/nvidia/nccl/lib/libnccl.so.2" \
  "$t/site/nvidia/nccl/include" -l:libnccl.so.2 -- PYTHONPATH="$t/site" "${C[@]}"
check "NCCL_HOME wins over the wheel" "$t/full/lib/libnccl.so.2" "$t/full/include" \
  -l:libnccl.so.2 -- NCCL_HOME="$t/full" PYTHONPATH="$t/site" "${C[@]}"
echo "test_find_nccl: $((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]
