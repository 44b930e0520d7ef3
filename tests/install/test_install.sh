#!/usr/bin/env bash
# Installs a zshard build into a temporary prefix and checks that a program outside the tree builds
# and runs against it both ways a user would: pkg-config, and find_package(zshard) in CMake.
#
# Usage: tests/install/test_install.sh BUILD_DIR CONSUMER_DIR [CC] [MPIEXEC]   (ctest passes all four)
set -euo pipefail

build=$(cd "$1" && pwd)
consumer=$(cd "$2" && pwd)
cc=${3:-cc}
mpiexec=${4:-mpirun}

work=$(mktemp -d "${TMPDIR:-/tmp}/zshard-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

# A sanitized library needs the sanitizer runtime first in the consumer too.
flags=()
if grep -q '^ZS_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  flags=("-fsanitize=address,undefined" -fno-omit-frame-pointer)
fi

# Runs the consumer binary $1 as a 1-rank MPI job; fails unless it exits 0. The installed .pc
# bakes no rpath into programs: like a user, point the loader at the prefix.
run_consumer() {
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$mpiexec" --oversubscribe \
    -x LD_LIBRARY_PATH -np 1 "$1"
}

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"
  exit 1
}

pcdir=$(dirname "$(find "$prefix" -name zshard.pc -print -quit)")
libdir=$(dirname "$pcdir")
if [ ! -f "$pcdir/zshard.pc" ]; then
  echo "FAIL: no zshard.pc installed under $prefix"
  exit 1
fi
cfgdir=$(dirname "$(find "$prefix" -name zshardConfig.cmake -print -quit)")

echo "== zshard-plan (installed, runs from the prefix without LD_LIBRARY_PATH)"
tool=$prefix/bin/zshard-plan
if [ ! -x "$tool" ]; then
  echo "FAIL: no bin/zshard-plan installed under $prefix"
  exit 1
fi
"$tool" --params 7.5e9 --world 64 --stage 3 --dtype bf16 --model-states-only --json | grep -q \
  '"model_states": 1875000000' || {
  echo "FAIL: the installed zshard-plan does not run or gives a wrong figure:"
  "$tool" --params 7.5e9 --world 64 --stage 3 --dtype bf16 --model-states-only --json || true
  exit 1
}

echo "== pkg-config (PKG_CONFIG_PATH=$pcdir)"
# A static library needs its dependencies at the link: pkg-config --static.
static=()
if grep -q '^BUILD_SHARED_LIBS:BOOL=OFF' "$build/CMakeCache.txt" 2>/dev/null; then
  static=(--static)
fi
read -r -a pc_flags < <(PKG_CONFIG_PATH=$pcdir pkg-config "${static[@]}" --cflags --libs zshard_kernels zshard)
echo "pkg-config --cflags --libs zshard_kernels zshard: ${pc_flags[*]}"
"$cc" -std=c11 -Wall -Wextra -Werror "${flags[@]}" "$consumer/consumer.c" -o "$work/consumer_pc" \
  "${pc_flags[@]}"
if readelf -d "$work/consumer_pc" | grep -q -E 'RPATH|RUNPATH'; then
  echo "FAIL: the pkg-config flags baked an rpath into the consumer:"
  readelf -d "$work/consumer_pc" | grep -E 'RPATH|RUNPATH'
  exit 1
fi
if LD_LIBRARY_PATH=$libdir ldd "$work/consumer_pc" | grep libzshard | grep -v -q "$prefix"; then
  echo "FAIL: consumer_pc does not load libzshard from $prefix:"
  LD_LIBRARY_PATH=$libdir ldd "$work/consumer_pc" | grep libzshard
  exit 1
fi
run_consumer "$work/consumer_pc"

echo "== find_package(zshard) (CMAKE_PREFIX_PATH=$prefix)"
cmake -S "$consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="${flags[*]}" -DCMAKE_BUILD_TYPE=Release \
  >"$work/cmake.log" || {
  cat "$work/cmake.log"
  exit 1
}
cmake --build "$work/cmake-build" >"$work/build.log" || {
  cat "$work/build.log"
  exit 1
}
grep -q "$cfgdir" "$work/cmake-build/CMakeCache.txt" || {
  echo "FAIL: find_package did not use the package in $cfgdir"
  exit 1
}
run_consumer "$work/cmake-build/consumer"
echo "install_consumer: both consumers built and ran"
