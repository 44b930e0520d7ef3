#!/usr/bin/env bash
# GPT-2 training throughput on one GPU: train_gpt2 (zshard) beside PyTorch on the same model and
# batch, in the same run. Prints a table, writes CSV, ends with a "headline:" line.
#   d12 (124M), bf16, seq 1024: zshard stage 0, zshard stage 3 (world 1), torch eager, torch.compile
#   d48 (1.5B), bf16, seq 1024: zshard stage 3 with --recompute
#   d12 stage 3 with the optimizer offloaded to pinned host memory (--runs d12s3off)
# Without a GPU it prints a SKIP line and exits 0. Run from the build directory:
#   bash ../bench/train_throughput.sh [--exe examples/train_gpt2] [--csv FILE] [--steps 20]
#        [--batch 8] [--d48-batch 4] [--peak-tflops 989]        (989: H100/H200 bf16 dense)
#        [--runs d12s0,d12s3,torch,d48]  (which runs, in this order; also d12s3off)
#        [--torch-modes eager,compile]
# Each run's CSV row is written as soon as it ends, so a run cut off by a time limit keeps the
# rows it finished.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
EXE=examples/train_gpt2
CSV=train_throughput.csv
STEPS=20
BATCH=8
BATCH48=4
PEAK=989
RUNS=d12s0,d12s3,torch,d48
TORCH_MODES=eager,compile
while [ $# -gt 0 ]; do
  case "$1" in
  --exe) EXE=$2; shift ;;
  --csv) CSV=$2; shift ;;
  --steps) STEPS=$2; shift ;;
  --batch) BATCH=$2; shift ;;
  --d48-batch) BATCH48=$2; shift ;;
  --peak-tflops) PEAK=$2; shift ;;
  --runs) RUNS=$2; shift ;;
  --torch-modes) TORCH_MODES=$2; shift ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
  shift
done
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: train_throughput needs a CUDA GPU (nvidia-smi finds none)"
  exit 0
fi
[ -x "$EXE" ] || { echo "train_throughput: $EXE is not built (build train_gpt2 with CUDA)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
LAUNCH=()
command -v mpirun >/dev/null && LAUNCH=(mpirun -np 1)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
GPU=$(nvidia-smi -L | head -1)
echo "name,model,stage,recompute,batch,seq,tokens_per_s,mfu,ms_per_step,peak_mib" >"$CSV"
ROWS=()

# Mean of a numeric JSONL field over the steps after the first 3 (warm-up) of file $1.
field_mean() {
  awk -v k="\"$2\":" '/"step":/ && /"tokens_per_s"/ {
      split($0, a, "\"step\":"); split(a[2], b, ","); if (b[1] + 0 <= 3) next
      i = index($0, k); if (!i) next; v = substr($0, i + length(k)) + 0; s += v; n++ }
    END { if (n) printf "%.4f", s / n; else printf "nan" }' "$1"
}

# Peak total bytes of the engine at the end (memory event), in MiB.
peak_mib() {
  grep '"when":"end"' "$1" | sed -E 's/.*"total":\[[0-9]+,([0-9]+)\].*/\1/' |
    awk '{ printf "%.0f", $1 / 1048576 }'
}

# run_zs NAME MODEL STAGE RECOMPUTE BATCH [ARGS...]: one train_gpt2 run on the bundled text
# (vocab 50257); ARGS go to train_gpt2.
run_zs() {
  local name=$1 model=$2 stage=$3 rec=$4 b=$5 m=$TMP/$1.jsonl
  local extra=("${@:6}")
  [ "$rec" = 1 ] && extra+=(--recompute)
  echo "== $name: $model stage $stage recompute $rec batch $b seq 1024 bf16"
  local rc=0 note=""
  "${LAUNCH[@]}" "$EXE" --device cuda --dtype bf16 --model "$model" --vocab 50257 \
    --stage "$stage" --batch "$b" --seq 1024 --steps "$STEPS" --lr 1e-4 --warmup 0 \
    --val-frac 0 --sample-lines 0 --log-every 5 --peak-tflops "$PEAK" --metrics "$m" \
    "${extra[@]}" >"$TMP/$name.log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    grep -v -e '^-*$' -e PMIx -e 'compression library' "$TMP/$name.log" | head -8
    tail -5 "$TMP/$name.log"
    # Every step measured before a failure at exit (a crash in destroy) is still a figure: kept,
    # marked; a run that died before its last step is a failure.
    local last
    last=$(grep -o '"step":[0-9]*' "$m" 2>/dev/null | tail -1 | cut -d: -f2)
    if [ "${last:-0}" != "$STEPS" ] || [ "$(field_mean "$m" tokens_per_s)" = nan ]; then
      ROWS+=("$(printf '%-22s FAILED (see above)' "$name")")
      return 1
    fi
    note=" (exit $rc after its steps)"
  fi
  grep -E '^step .*(/|val)' "$TMP/$name.log" | tail -2
  local tps mfu ms pk
  tps=$(field_mean "$m" tokens_per_s)
  mfu=$(field_mean "$m" mfu)
  ms=$(field_mean "$m" ms)
  pk=$(peak_mib "$m")
  echo "$name,$model,$stage,$rec,$b,1024,$tps,$mfu,$ms,$pk" >>"$CSV"
  ROWS+=("$(printf '%-22s %12.0f %7.1f%% %10.1f %10s%s' "$name" "$tps" \
    "$(awk -v x="$mfu" 'BEGIN{print 100*x}')" "$ms" "$pk" "$note")")
  [ -z "$note" ]
}

run_torch() { # the PyTorch peer on the same model, batch and data shape
  echo "== torch peer: d12 batch $BATCH seq 1024 bf16 ($TORCH_MODES)"
  PY=$(command -v python3 || true)
  if [ -n "$PY" ]; then
    # Without the caller's LD_LIBRARY_PATH (the GPU machine's carried libraries come first there):
    # torch loads the libraries it was built with.
    env -u LD_LIBRARY_PATH "$PY" "$HERE/peers/torch_gpt2.py" --model d12 --batch "$BATCH" --seq 1024 --steps "$STEPS" \
      --dtype bf16 --modes "$TORCH_MODES" --peak-tflops "$PEAK" 2>"$TMP/torch.err" | tee "$TMP/torch.out"
    tail -3 "$TMP/torch.err"
    while read -r _ name kv; do
      tps=$(echo "$kv" | sed -E 's/.*tokens_per_s=([0-9.]+).*/\1/')
      mfu=$(echo "$kv" | sed -E 's/.*mfu=([0-9.]+).*/\1/')
      ms=$(echo "$kv" | sed -E 's/.*ms_per_step=([0-9.]+).*/\1/')
      echo "${name}_d12,d12,-,0,$BATCH,1024,$tps,$mfu,$ms," >>"$CSV"
      ROWS+=("$(printf '%-22s %12.0f %7.1f%% %10.1f %10s' "${name}_d12" "$tps" \
        "$(awk -v x="$mfu" 'BEGIN{print 100*x}')" "$ms" "-")")
    done < <(grep '^RESULT' "$TMP/torch.out")
  else
    echo "SKIP torch peer: no python3"
  fi
}

for r in ${RUNS//,/ }; do
  case $r in
  d12s0) run_zs zshard_d12_stage0 d12 0 0 "$BATCH" ;;
  d12s3) run_zs zshard_d12_stage3 d12 3 0 "$BATCH" ;;
  d12s3off) run_zs zshard_d12_stage3_offload d12 3 0 "$BATCH" --offload opt ;;
  torch) run_torch ;;
  d48) run_zs zshard_d48_stage3_rc d48 3 1 "$BATCH48" ;;
  *) echo "train_throughput: unknown run '$r' (d12s0 d12s3 d12s3off torch d48)"; exit 2 ;;
  esac
done

echo
echo "GPU: $GPU | steps $STEPS (first 3 excluded) | MFU vs $PEAK TFLOP/s"
printf '%-22s %12s %8s %10s %10s\n' run tokens/s MFU ms/step peak_MiB
for r in "${ROWS[@]}"; do echo "$r"; done
echo "csv: $CSV"
summary=$(for r in "${ROWS[@]}"; do echo "$r" | awk '{ if ($2 == "FAILED") printf "%s FAILED; ", $1; else printf "%s %s tok/s %s%s; ", $1, $2, $3, (i = index($0, " (exit")) ? substr($0, i) : "" }'; done)
echo "headline: ${summary%; }"
