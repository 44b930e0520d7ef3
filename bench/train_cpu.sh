#!/usr/bin/env bash
# CPU training throughput: train_gpt2 (1 rank, stage 0 and stage 3) beside PyTorch eager on the
# same GPT (pre-norm, tied head, tanh GELU), batch and sequence, fp32, one thread each, in one run;
# then train_llama (stage 0 and 3) beside PyTorch eager on the same Llama (RMSNorm, RoPE, 4 query /
# 2 key-value heads, SwiGLU, untied head; bench/peers/torch_llama.py), its own rows and line.
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

# Mean ms/step of train_llama after 3 warm-up steps.
llama_shape=(--layers 4 --hidden 128 --intermediate 352 --heads 4 --kv-heads 2 --seq 64 --batch 8)
llama_ms() {
  "$build/examples/train_llama" --stage "$1" "${llama_shape[@]}" --steps "$steps" 2>&1 |
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
l0=$(llama_ms 0)
l3=$(llama_ms 3)
lt=$("$py" "$repo/bench/peers/torch_llama.py" "${llama_shape[@]}" --vocab 256 \
  --steps $((steps - 3)) --warmup 3 --threads 1 | sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p')
printf '%-22s %10s\n' "llama zshard stage 0" "$l0" "llama zshard stage 3" "$l3" \
  "llama torch eager" "$lt"
awk -v z0="$l0" -v z3="$l3" -v t="$lt" 'BEGIN { printf "llama: train_cpu: zshard stage 3 %.2fx torch eager speed, stage 3 / stage 0 time %.3f\n", t / z3, z3 / z0 }'
awk -v z0="$z0" -v z3="$z3" -v t="$t" 'BEGIN { printf "headline: train_cpu: zshard stage 3 %.2fx torch eager speed, stage 3 / stage 0 time %.3f\n", t / z3, z3 / z0 }'
