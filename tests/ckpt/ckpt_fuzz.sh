#!/usr/bin/env bash
# Builds the checkpoint parsers' libFuzzer target with clang (ASan + UBSan) and runs it for a
# bounded time, seeded with a real manifest and data file header. Skips (77) without clang's
# libFuzzer. Usage: ckpt_fuzz.sh SRC_DIR MPIEXEC TEST_ENGINE_TRAIN [SECONDS]
set -euo pipefail
src=$1 mpiexec=$2 exe=$3 secs=${4:-30}
command -v clang >/dev/null || { echo "SKIP: no clang"; exit 77; }
clang --version >/dev/null 2>&1 || { echo "SKIP: clang does not run here (a library it needs is missing)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cflags=$(pkg-config --cflags libcjson libxxhash)
libs=$(pkg-config --libs libcjson libxxhash)
# shellcheck disable=SC2086
if ! clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -D_GNU_SOURCE \
  -I"$src/include" -I"$src/src" $cflags "$src/tests/ckpt/fuzz_ckpt.c" \
  "$src/src/ckpt/ckpt_manifest.c" "$src/src/ckpt/ckpt_header.c" "$src/src/base/error.c" \
  $libs -o "$tmp/fuzz" 2>"$tmp/build.log"; then
  if grep -q "fuzzer" "$tmp/build.log"; then echo "SKIP: clang has no libFuzzer"; exit 77; fi
  cat "$tmp/build.log"
  exit 1
fi
# Seeds: a real checkpoint's manifest (prefixed 1) and data file (prefixed 0).
# (two steps, the second without a gradient for one unit: a version-3 manifest with units' steps;
# groups on Lion and SGD: the groups' keys, and segments with fewer arrays, "narrays")
ZS_TEST_CKPT_BLOCK_BYTES=200 "$mpiexec" --oversubscribe -np 2 "$exe" --stage 3 --steps 2 --nograd 1 \
  --groups 2 --save "$tmp/ck" >/dev/null
mkdir "$tmp/corpus"
{ printf '\001'; cat "$tmp"/ck/ckpt-*/manifest.json; } >"$tmp/corpus/manifest"
{ printf '\000'; cat "$tmp"/ck/ckpt-*/rank-00000.zsd; } >"$tmp/corpus/header"
"$tmp/fuzz" -max_total_time="$secs" -max_len=8192 -print_final_stats=1 "$tmp/corpus" 2>&1 | tail -15
echo "ckpt_fuzz: ${secs}s without a crash"
