#!/usr/bin/env bash
# Step-time cost of the rank divergence check (src/comm/sig.c): train_gpt2 at stage 3 on 2 ranks
# (CPU device, MPI), runs alternating ZS_COMM_CHECK=0 (off) and the default (on, every build
# type), each the mean ms/step after 3 warm-up steps; prints the median of the runs of each and
# their difference, and (less noisy: one run, no comparison across runs) the median share of the
# step that rank 0 spent in the header exchanges (zs_step_stats.check_seconds). SHAPE=demo (default: 4 layers, 128 channels, seq 64, batch 8) or SHAPE=d12 (GPT-2
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

# "ms check_ms": the means over the steps after 3 warm-up steps of one run's step time and of the
# part of it rank 0 spent in the check's header exchanges (zs_step_stats.check_seconds, the
# metrics' check_ms) ($1: ZS_COMM_CHECK; empty: the default).
run_ms() {
  local m
  m=$(mktemp)
  env ${1:+ZS_COMM_CHECK=$1} mpirun --oversubscribe -np 2 "$build/examples/train_gpt2" --stage 3 \
    "${shape[@]}" --steps "$steps" --sample-lines 0 --metrics "$m" >/dev/null 2>&1
  awk 'function val(k,  i) { i = index($0, "\"" k "\":"); return substr($0, i + length(k) + 3) + 0 }
       /"step":/ && /"ms":/ { if (val("step") <= 3) next; ms += val("ms"); ck += val("check_ms"); n++ }
       END { if (n) printf "%.3f %.4f\n", ms / n, ck / n; else print "nan nan" }' "$m"
  rm -f "$m"
}

if [[ ${LATENCY_ONLY:-0} == 1 ]]; then runs=0; fi
off=() on=() frac=()
for ((i = 0; i < runs; i++)); do
  read -r ms _ < <(run_ms 0)
  off+=("$ms")
  read -r ms ck < <(run_ms "")
  on+=("$ms")
  frac+=("$(awk -v a="$ck" -v b="$ms" 'BEGIN { printf "%.3f", 100 * a / b }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
if ((runs > 0)); then
  m0=$(median "${off[@]}")
  m1=$(median "${on[@]}")
  mf=$(median "${frac[@]}")
  echo "check off (ms/step per run): ${off[*]}"
  echo "check on  (ms/step per run): ${on[*]}"
  echo "check on: % of the step in header exchanges, per run (rank 0): ${frac[*]}"
  awk -v a="$m0" -v b="$m1" -v f="$mf" -v sh="${SHAPE:-demo}" 'BEGIN { printf "headline: diverge_check " sh ": median %.2f ms/step off, %.2f on (%+.2f%%, runs apart); in the same runs the header exchanges took %.3f%% of the step\n", a, b, 100 * (b - a) / a, f }'
fi

# Latency-bound: tiny units, many steps, off and on alternating inside one mpirun.
[[ ${LATENCY:-1} == 0 ]] && exit 0
mpirun --oversubscribe -np 4 "$build/bench/diverge_latency" --units 8 --numel 16 \
  --steps "${LAT_STEPS:-400}" --rounds "${LAT_ROUNDS:-5}"
