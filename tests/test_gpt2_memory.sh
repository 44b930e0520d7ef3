#!/usr/bin/env bash
# train_gpt2 at stage 3 with evaluation every step and sampling: the engine's buffers peak stays
# within the memory rule of zshard.h. The example holds one unit at a time, so gathered params
# are at most (1 + prefetch) units; gradients add the tied embedding's (alive through the
# backward) and one more unit's; deterministic reductions need no scratch beyond the norm bins
# here (fp32, no bucket). Bound: (3 + prefetch) x largest unit + padding + 4 KiB. Before the fix
# evaluation gathered the whole model (8 blocks), far above it.
# Usage: test_gpt2_memory.sh TRAIN_GPT2 MPIEXEC
set -euo pipefail
exe=$1
mpiexec=$2
prefetch=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$mpiexec" --oversubscribe -np 2 "$exe" --stage 3 --prefetch "$prefetch" --layers 8 --channels 64 \
  --heads 4 --seq 32 --batch 4 --steps 4 --eval-every 1 --eval-batches 2 --sample-lines 2 \
  --sample-chars 40 --log-every 1 >"$log" 2>&1 || {
  cat "$log"
  echo "test_gpt2_memory: train_gpt2 failed"
  exit 1
}
largest=$(sed -nE 's/^largest unit: [0-9]+ params \(([0-9]+) bytes.*/\1/p' "$log" | head -n1)
peak=$(awk '/^memory of rank 0\/.*\(end\)/{p=1} p&&$1=="buffers"{print $3; exit}' "$log")
if [ -z "$largest" ] || [ -z "$peak" ]; then
  cat "$log"
  echo "test_gpt2_memory: could not read the largest unit or the buffers peak"
  exit 1
fi
awk -v peak="$peak" -v L="$largest" -v p="$prefetch" 'BEGIN {
  bound = ((3 + p) * (L + 64 * 4) + 4096) / 1048576.0;
  printf "buffers peak %.2f MiB, bound %.3f MiB (largest unit %d bytes, prefetch %d)\n", peak, bound, L, p;
  if (peak > bound + 0.005) { print "test_gpt2_memory: FAIL: buffers peak above the bound"; exit 1 }
  print "test_gpt2_memory: OK"
}'
