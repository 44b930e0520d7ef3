#!/usr/bin/env bash
# Step-time cost of the rank divergence check (src/comm/sig.c): train_gpt2 at stage 3 on 2 ranks
# (CPU device, MPI), runs alternating ZS_COMM_CHECK=0 (off) and the default (on, every build
# type), each the mean ms/step after 3 warm-up steps; prints the median of the runs of each and
# the overhead. SHAPE=demo (default: 4 layers, 128 channels, seq 64, batch 8) or SHAPE=d12 (GPT-2
# 124M: 12 layers, 768 channels, vocab 50257, seq 64, batch 2; STEPS 8 is plenty). Then the
# latency-bound case in one run (bench/diverge_latency.c): 4 ranks, 8 units of 16 floats, stage 3,
# engines alternately made with the check off and on, LAT_STEPS steps per round (default 400),
# LAT_ROUNDS rounds (5): the header and agreement cost per step and per collective.
# Usage: bench/diverge_check.sh [BUILD_DIR] (default build); RUNS=N (default 7), STEPS=N (23);
# LATENCY_ONLY=1 skips the train_gpt2 part, LATENCY=0 the latency part.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
runs=${RUNS:-7}
steps=${STEPS:-23}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

shape=(--layers 4 --channels 128 --heads 4 --seq 64 --batch 8)
[[ ${SHAPE:-demo} == d12 ]] && shape=(--model d12 --vocab 50257 --seq 64 --batch 2)

# Mean ms/step of one run after 3 warm-up steps ($1: ZS_COMM_CHECK; unset: the default).
run_ms() {
  env ${1:+ZS_COMM_CHECK=$1} mpirun --oversubscribe -np 2 "$build/examples/train_gpt2" --stage 3 \
    "${shape[@]}" --steps "$steps" --sample-lines 0 2>&1 |
    grep -E "^step +[0-9]+/$steps" | awk -F'|' 'NR > 3 { gsub(/ms/, "", $5); s += $5; n++ }
                                             END { printf "%.2f", s / n }'
}

if [[ ${LATENCY_ONLY:-0} == 1 ]]; then runs=0; fi
off=() on=()
for ((i = 0; i < runs; i++)); do
  off+=("$(run_ms 0)")
  on+=("$(run_ms "")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
if ((runs > 0)); then
  m0=$(median "${off[@]}")
  m1=$(median "${on[@]}")
  echo "check off (ms/step per run): ${off[*]}"
  echo "check on  (ms/step per run): ${on[*]}"
  awk -v a="$m0" -v b="$m1" -v sh="${SHAPE:-demo}" 'BEGIN { printf "headline: diverge_check " sh ": median %.2f ms/step off, %.2f on: %+.2f%%\n", a, b, 100 * (b - a) / a }'
fi

# Latency-bound: tiny units, many steps, off and on alternating inside one mpirun.
[[ ${LATENCY:-1} == 0 ]] && exit 0
mpirun --oversubscribe -np 4 "$build/bench/diverge_latency" --units 8 --numel 16 \
  --steps "${LAT_STEPS:-400}" --rounds "${LAT_ROUNDS:-5}"
