#!/usr/bin/env bash
# Runs a GPU test command and checks that it really ran where it was meant to:
#   gpu_expect.sh CUDA_PROBE ERE [ERE...] -- COMMAND [ARGS...]
# Without a CUDA device (CUDA_PROBE, tests/cuda_probe.c, exits 77) it prints
# "SKIP: no CUDA device" and exits 0 without running COMMAND. Otherwise COMMAND must exit 0,
# must not skip (the probe saw a GPU), and its output (stdout + stderr, shown as it comes) must
# match every extended regular expression, e.g. the engine banner "cuda:0, comm nccl, world 4,
# shard group 2" (zs_engine_info): an option that silently fell back to another device or
# backend, or a run that never got that far, fails the test instead of passing it.
set -uo pipefail
probe=$1
shift
pats=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  pats+=("$1")
  shift
done
if [ $# -lt 2 ]; then
  echo "usage: gpu_expect.sh CUDA_PROBE ERE [ERE...] -- COMMAND [ARGS...]" >&2
  exit 2
fi
shift
"$probe" >/dev/null 2>&1
case $? in
  0) ;;
  77) echo "SKIP: no CUDA device"; exit 0 ;;
  *) echo "FAIL: the CUDA probe $probe failed"; exit 1 ;;
esac
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The command's own skip line is shown renamed: ctest's skip pattern must not hide a test that
# skipped although the probe saw a GPU.
"$@" 2>&1 | tee "$log" | sed 's/^SKIP: no CUDA device/(the command skipped: no CUDA device)/'
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "FAIL: the command exited with status $rc"
  exit "$rc"
fi
if grep -Eq '^SKIP: no CUDA device|SKIP \(no CUDA device\)' "$log"; then
  echo "FAIL: the probe sees a CUDA device but the command skipped"
  exit 1
fi
for p in "${pats[@]}"; do
  if ! grep -Eq -- "$p" "$log"; then
    echo "FAIL: the output never matched /$p/ (the run did not reach the path it tests)"
    exit 1
  fi
  echo "gpu_expect: matched /$p/"
done
