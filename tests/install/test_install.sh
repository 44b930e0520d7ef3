#!/usr/bin/env bash
# Installs a zshard build into a temporary prefix and checks that a program outside the tree builds
# and runs against it both ways a user would: pkg-config, and find_package(zshard) in CMake; and
# that the two libraries depend one way: the kernels on the engine, never the engine on the kernels.
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

# LD_LIBRARY_PATH without every folder that holds a libzshard (a build tree): zshard must come
# from the rpath, while the dependencies stay findable where only LD_LIBRARY_PATH finds them (the
# GPU machine's carried MPI, whose mpirun needs it; device-first.sh and the rehearsal set it).
ld_no_zs=""
IFS=: read -r -a ld_dirs <<<"${LD_LIBRARY_PATH:-}"
for d in "${ld_dirs[@]}"; do
  [ -n "$d" ] || continue
  compgen -G "$d/libzshard*.so*" >/dev/null || ld_no_zs+="${ld_no_zs:+:}$d"
done

# Runs the consumer binary $1 as a 1-rank MPI job with no zshard folder on LD_LIBRARY_PATH (the
# README's recipe: the program's own rpath finds the prefix, the libraries' RUNPATH their
# dependencies); fails unless it exits 0.
run_consumer() {
  if [ -n "$ld_no_zs" ]; then
    env LD_LIBRARY_PATH="$ld_no_zs" "$mpiexec" --oversubscribe -np 1 "$1"
  else
    env -u LD_LIBRARY_PATH "$mpiexec" --oversubscribe -np 1 "$1"
  fi
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

# Shared libraries: libzshard_kernels finds libzshard beside it ($ORIGIN), with no
# LD_LIBRARY_PATH, so a program that only has an rpath to the prefix loads both.
if [ -e "$libdir/libzshard_kernels.so" ]; then
  echo "== installed libraries' RUNPATH"
  readelf -d "$libdir/libzshard_kernels.so" | grep -E 'RUNPATH|RPATH' | grep -q 'ORIGIN' || {
    echo "FAIL: the installed libzshard_kernels.so has no \$ORIGIN RUNPATH:"
    readelf -d "$libdir/libzshard_kernels.so" | grep -E 'RUNPATH|RPATH' || true
    exit 1
  }
  env -u LD_LIBRARY_PATH ldd "$libdir/libzshard_kernels.so" | grep 'libzshard\.so' | grep -q "$prefix" || {
    echo "FAIL: the installed libzshard_kernels.so does not find libzshard in $libdir:"
    env -u LD_LIBRARY_PATH ldd "$libdir/libzshard_kernels.so" | grep libzshard || true
    exit 1
  }
fi

echo "== one-way dependency: libzshard_kernels needs libzshard, libzshard never the kernels"
if grep -q '^ *# *include.*zshard_kernels' "$prefix/include/zshard.h"; then
  echo "FAIL: the installed zshard.h includes zshard_kernels.h"
  exit 1
fi
if [ -e "$libdir/libzshard.so" ] && readelf -d "$libdir/libzshard.so" | grep NEEDED | grep -q zshard_kernels; then
  echo "FAIL: the installed libzshard.so needs libzshard_kernels"
  exit 1
fi
pc_engine=$(PKG_CONFIG_PATH=$pcdir pkg-config --libs zshard)
pc_kernels=$(PKG_CONFIG_PATH=$pcdir pkg-config --libs zshard_kernels)
if [[ " $pc_engine " == *zshard_kernels* || " $pc_kernels " != *" -lzshard "* ]]; then
  echo "FAIL: pkg-config zshard must not bring the kernels ($pc_engine), zshard_kernels must bring zshard ($pc_kernels)"
  exit 1
fi
targets=$(cat "$cfgdir/zshardTargets.cmake") # the interface, not the per-configuration files
engine_props=$(sed -n '/^set_target_properties(zshard::zshard /,/^)/p' <<<"$targets")
kernels_props=$(sed -n '/^set_target_properties(zshard::kernels /,/^)/p' <<<"$targets")
if [[ $engine_props == *kernels* || $kernels_props != *zshard::zshard* ]]; then
  echo "FAIL: zshard::zshard must not link the kernels, zshard::kernels must link zshard::zshard:"
  echo "$engine_props"
  echo "$kernels_props"
  exit 1
fi

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
# zshard_kernels alone: it requires zshard.
read -r -a pc_flags < <(PKG_CONFIG_PATH=$pcdir pkg-config "${static[@]}" --cflags --libs zshard_kernels)
echo "pkg-config --cflags --libs zshard_kernels: ${pc_flags[*]}"
if [[ " ${pc_flags[*]} " == *rpath* ]]; then
  echo "FAIL: the pkg-config flags carry an rpath (the README says how to add one): ${pc_flags[*]}"
  exit 1
fi
# The README's line: the program's own rpath to the prefix (pkg-config's libdir variable).
pc_libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir zshard)
# ZSHARD_NO_DEPRECATED: the consumer uses today's names only (zshard_kernels.h's deprecated macros
# hidden).
"$cc" -std=c11 -Wall -Wextra -Werror -DZSHARD_NO_DEPRECATED "${flags[@]}" "$consumer/consumer.c" -o "$work/consumer_pc" \
  "${pc_flags[@]}" -Wl,-rpath,"$pc_libdir"
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
