#!/usr/bin/env bash
# Stage 3 with evaluation every step and text sampling: the engine's transient buffers (rank 0's
# ledger, bytes from the --metrics memory event) against the model's full size, for prefetch
# 0, 1, 2. Usage: bench/stage3_eval_memory.sh [BUILD_DIR] (default build). 4 ranks, CPU device.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
shape=(--layers 8 --channels 128 --heads 4 --seq 64 --batch 8)
met=$(mktemp)
log=$(mktemp)
trap 'rm -f "$met" "$log"' EXIT
printf '%-9s %14s %14s %14s %12s\n' prefetch "buffers peak" "buffers end" "params (1/N)" "peak/model"
for p in 0 1 2; do
  mpirun --oversubscribe -np 4 "$build/examples/train_gpt2" --stage 3 --prefetch "$p" "${shape[@]}" \
    --steps 6 --eval-every 1 --eval-batches 4 --sample-lines 2 --sample-chars 64 --log-every 6 \
    --metrics "$met" >"$log" 2>&1
  ev=$(grep '"event":"memory"' "$met" | tail -n1)
  cur=$(sed -nE 's/.*"buffers":\[([0-9]+),([0-9]+)\].*/\1/p' <<<"$ev")
  peak=$(sed -nE 's/.*"buffers":\[([0-9]+),([0-9]+)\].*/\2/p' <<<"$ev")
  params=$(sed -nE 's/.*"params":\[([0-9]+),([0-9]+)\].*/\1/p' <<<"$ev")
  awk -v p="$p" -v a="$peak" -v c="$cur" -v s="$params" 'BEGIN {
    printf "%-9d %14d %14d %14d %12.2f\n", p, a, c, s, a / (4.0 * s) }'
done
