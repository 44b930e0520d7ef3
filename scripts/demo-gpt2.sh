#!/usr/bin/env bash
# GPT-2 demo: builds zshard into build/, trains a small byte-level GPT (4 layers, C=128, 4 heads,
# T=64) on the bundled King James Genesis with 4 ranks at stage 3 (mpirun; CPU, or the GPU when
# nvidia-smi works), then shows the loss curve file, the memory table and sampled text. Exits 1
# unless the validation loss ends below DEMO_FRAC (0.8) x the unigram entropy of the text.
#   DEMO_STEPS=250 DEMO_NP=4 DEMO_DEVICE=cpu|cuda scripts/demo-gpt2.sh      (~3-4 min on 2 cores)
#   scripts/demo-gpt2.sh --summary LOG    only the summary of an earlier run's log (tests use it)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# summary LOG: the headline numbers, rank 0's memory table at the end and the sampled text. The
# table's heading is "memory of rank 0/N (end; <precision mode>), MiB"; its rows are indented.
summary() {
  local log=$1
  grep -m1 "^unigram entropy" "$log" || true
  grep "val loss" "$log" | tail -1 || true
  grep -m1 "^final loss" "$log" || true
  echo "memory at the end of training, rank 0 (every rank's table is in the log):"
  awk '/^memory of rank 0\/[0-9]+ \(end[;)]/{p=1;next} p&&/^  /{print;next} {p=0}' "$log"
  echo "sampled text:"
  awk '/^---- sample/{p=1;next} /^----$/{p=0} p' "$log" | sed 's/^/  | /'
}
if [ "${1:-}" = --summary ]; then
  summary "$2"
  exit 0
fi
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/demo-gpt2
STEPS=${DEMO_STEPS:-250}
NP=${DEMO_NP:-4}
FRAC=${DEMO_FRAC:-0.8}
DEVICE=${DEMO_DEVICE:-}
if [ -z "$DEVICE" ]; then
  DEVICE=cpu
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then DEVICE=cuda; fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1
if [ "$DEVICE" = cuda ]; then
  NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
  # NCCL refuses two ranks on one GPU: more ranks than GPUs share them through the mpi backend.
  if [ "$NP" -gt "$NGPU" ]; then export ZS_COMM=mpi; fi
fi

echo "== build ($BUILD)"
cmake -S "$ROOT" -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target train_gpt2 >/dev/null
mkdir -p "$OUT"

echo "== train: $NP ranks, stage 3, $DEVICE, $STEPS steps"
ARGS=(--stage 3 --device "$DEVICE" --layers 4 --channels 128 --heads 4 --seq 64 --batch 8
      --micro-steps 1 --steps "$STEPS" --lr 2e-3 --warmup 25 --eval-every 50 --eval-batches 8
      --log-every 10 --metrics "$OUT/metrics.jsonl" --plot "$OUT/loss.svg" --tensorboard "$OUT/tb"
      --sample-lines 4 --sample-chars 400 --temperature 0.7 --check-frac "$FRAC")
set +e
mpirun --oversubscribe -np "$NP" "$BUILD/examples/train_gpt2" "${ARGS[@]}" 2>&1 | tee "$OUT/log.txt"
rc=${PIPESTATUS[0]}
set -e

echo
echo "== summary"
echo "loss curve:   $OUT/loss.svg   (metrics: $OUT/metrics.jsonl, log: $OUT/log.txt)"
echo "tensorboard:  tensorboard --logdir $OUT/tb"
summary "$OUT/log.txt"
if [ "$rc" -ne 0 ]; then
  echo "demo-gpt2: FAILED (train_gpt2 exit $rc)"
  exit 1
fi
echo "demo-gpt2: OK (final loss below $FRAC x unigram entropy)"
