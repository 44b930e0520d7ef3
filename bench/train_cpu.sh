#!/usr/bin/env bash
# CPU training throughput: train_gpt2 (1 rank, stage 0 and stage 3) beside PyTorch eager on the
# same GPT (pre-norm, tied head, tanh GELU), batch and sequence, fp32, one thread each, in one run.
# Usage: bench/train_cpu.sh [BUILD_DIR] (default build); needs a Python with torch
# (scripts/ensure-torch.sh finds one or installs Debian's). Prints a table and a last "headline:" line.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
shape=(--layers 4 --channels 128 --heads 4 --seq 64 --batch 8)
steps=${STEPS:-23}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py=$(bash "$repo/scripts/ensure-torch.sh")

# Mean ms/step of train_gpt2 after 3 warm-up steps.
zshard_ms() {
  "$build/examples/train_gpt2" --stage "$1" "${shape[@]}" --steps "$steps" --sample-lines 0 2>&1 |
    grep -E "^step +[0-9]+/$steps" | awk -F'|' 'NR > 3 { gsub(/ms/, "", $5); s += $5; n++ }
                                             END { printf "%.1f", s / n }'
}

z0=$(zshard_ms 0)
z3=$(zshard_ms 3)
t=$("$py" "$repo/bench/peers/torch_gpt2.py" --device cpu "${shape[@]}" --vocab 256 \
  --steps $((steps - 3)) --warmup 3 --dtype fp32 --modes eager --threads 1 |
  sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p')
printf '%-22s %10s\n' "run" "ms/step"
printf '%-22s %10s\n' "zshard stage 0" "$z0" "zshard stage 3" "$z3" "torch eager" "$t"
awk -v z0="$z0" -v z3="$z3" -v t="$t" 'BEGIN { printf "headline: train_cpu: zshard stage 3 %.2fx torch eager speed, stage 3 / stage 0 time %.3f\n", t / z3, z3 / z0 }'
