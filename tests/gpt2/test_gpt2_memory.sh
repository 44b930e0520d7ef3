#!/usr/bin/env bash
# train_gpt2 at stage 3 with evaluation every step and sampling: the engine's buffers peak stays
# within the memory rule (docs/MEMORY.md §1). The example holds one unit at a time, so gathered params
# are at most (1 + prefetch) units; one unit's full gradient lives at a time (the tied
# embedding's head share is flushed with zs_unit_grads_flush); non-deterministic fp32
# reductions without buckets need no scratch beyond the norm bins. Bound: (2 + prefetch) x
# largest unit + padding + 4 KiB. Before the fix evaluation gathered the whole model (8 blocks):
# 1.60 MiB against a bound of 0.58 MiB. The byte counts come from the --metrics memory event.
# Usage: test_gpt2_memory.sh TRAIN_GPT2 MPIEXEC
set -euo pipefail
exe=$1
mpiexec=$2
prefetch=1
log=$(mktemp)
met=$(mktemp)
trap 'rm -f "$log" "$met"' EXIT
"$mpiexec" --oversubscribe -np 2 "$exe" --stage 3 --prefetch "$prefetch" --layers 8 --channels 64 \
  --heads 4 --seq 32 --batch 4 --steps 4 --eval-every 1 --eval-batches 2 --sample-lines 2 \
  --sample-chars 40 --log-every 1 --metrics "$met" >"$log" 2>&1 || {
  cat "$log"
  echo "test_gpt2_memory: train_gpt2 failed"
  exit 1
}
largest=$(sed -nE 's/^largest unit: [0-9]+ params \(([0-9]+) bytes.*/\1/p' "$log" | head -n1)
# Rank 0's memory at the end, in bytes: "buffers":[cur,peak] of the last memory event.
peak=$(grep '"event":"memory"' "$met" | tail -n1 | sed -nE 's/.*"buffers":\[[0-9]+,([0-9]+)\].*/\1/p')
if [ -z "$largest" ] || [ -z "$peak" ]; then
  cat "$log"
  echo "test_gpt2_memory: could not read the largest unit or the buffers peak"
  exit 1
fi
awk -v peak="$peak" -v L="$largest" -v p="$prefetch" 'BEGIN {
  bound = (2 + p) * (L + 64 * 4) + 4096;
  printf "buffers peak %d bytes, bound %d bytes (largest unit %d bytes, prefetch %d)\n", peak, bound, L, p;
  if (peak > bound) { print "test_gpt2_memory: FAIL: buffers peak above the bound"; exit 1 }
  print "test_gpt2_memory: OK"
}'
