#!/usr/bin/env bash
# What an asynchronous save costs a real training run: train_gpt2 twice on the same model, data
# and save points, first with synchronous saves (the peer: --ckpt-async 0), then with
# --ckpt-async 1, reading both runs' JSONL metrics (ckpt_s, ckpt_wait_s, ckpt_writing, ms).
# Prints per run the saves' blocking seconds and the step times, and a last "ckpt_async_train:"
# line: the asynchronous blocking against the synchronous (target <= 0.10; the first
# asynchronous save, which allocates its staging, apart), the median and mean step while a
# write runs against the synchronous run's steps (target <= 1.05x), and the seconds later save
# points and the run's end still waited for a write. Run from the build directory:
#   bash ../bench/ckpt_async_train.sh [--exe examples/train_gpt2] [--device cuda|cpu]
#        [--model d12 | --layers L --channels C --heads H] [--dtype bf16] [--batch 8]
#        [--seq 1024] [--steps 60] [--save-every 20] [--np 1] [--dir DIR] [--csv FILE]
# Defaults: GPT-2 d12 in bf16 on one GPU at stage 3, batch 8 x 1024. With --device cuda and no
# GPU it prints a SKIP line and exits 0. --device cpu runs anywhere (give it a small model).
# --save-every must leave the write time to finish before the next save point, or the next save
# waits for it (reported as waits). The checkpoints go to DIR/sync and DIR/async (default: a
# temporary folder), which are emptied before and removed after the runs.
set -uo pipefail
EXE=examples/train_gpt2
DEVICE=cuda
MODEL=(--model d12)
SHAPE=() # --layers/--channels/--heads: replaces --model
DTYPE=bf16
BATCH=8
SEQ=1024
STEPS=60
EVERY=20
NP=1
DIR=
CSV=ckpt_async_train.csv
while [ $# -gt 0 ]; do
  case "$1" in
  --exe) EXE=$2; shift ;;
  --device) DEVICE=$2; shift ;;
  --model) MODEL=(--model "$2"); shift ;;
  --layers | --channels | --heads) SHAPE+=("$1" "$2"); shift ;;
  --dtype) DTYPE=$2; shift ;;
  --batch) BATCH=$2; shift ;;
  --seq) SEQ=$2; shift ;;
  --steps) STEPS=$2; shift ;;
  --save-every) EVERY=$2; shift ;;
  --np) NP=$2; shift ;;
  --dir) DIR=$2; shift ;;
  --csv) CSV=$2; shift ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
  shift
done
[ ${#SHAPE[@]} = 0 ] || MODEL=("${SHAPE[@]}")
if ! [ "$EVERY" -ge 1 ] 2>/dev/null || ! [ "$STEPS" -gt 3 ] 2>/dev/null || [ "$EVERY" -gt "$STEPS" ]; then
  echo "ckpt_async_train: need --steps > 3 and 1 <= --save-every <= --steps (got $STEPS, $EVERY)"
  exit 2
fi
if [ "$DEVICE" = cuda ] && { ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; }; then
  echo "SKIP: ckpt_async_train --device cuda needs a CUDA GPU (nvidia-smi finds none)"
  exit 0
fi
[ -x "$EXE" ] || { echo "ckpt_async_train: $EXE is not built"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
LAUNCH=()
# Unbound: the writer thread (nice 19) runs on a core of its own, as the README asks of a run with
# asynchronous saves (bound to its rank's core it would get little of it while the step runs).
command -v mpirun >/dev/null && LAUNCH=(mpirun -np "$NP" --bind-to none)
TMP=$(mktemp -d)
[ -n "$DIR" ] || DIR=$TMP/ckpt
trap 'rm -rf "$TMP" "$DIR"/sync "$DIR"/async' EXIT
mkdir -p "$DIR" || exit 1
what=$([ "$DEVICE" = cuda ] && nvidia-smi -L | head -1 || echo "CPU: $(nproc) cores")

# run MODE ASYNC: one training run; its JSONL in $TMP/MODE.jsonl.
run() {
  local mode=$1 async=$2 rc=0
  rm -rf "${DIR:?}/$mode"
  echo "== $mode: ${MODEL[*]} $DTYPE $DEVICE, $NP rank(s), stage 3, batch $BATCH x $SEQ, $STEPS steps, a save every $EVERY (--ckpt-async $async)"
  ${LAUNCH[@]+"${LAUNCH[@]}"} "$EXE" --device "$DEVICE" --dtype "$DTYPE" "${MODEL[@]}" --vocab 50257 \
    --stage 3 --batch "$BATCH" --seq "$SEQ" --steps "$STEPS" --lr 1e-4 --warmup 0 --val-frac 0 \
    --sample-lines 0 --log-every "$EVERY" --metrics "$TMP/$mode.jsonl" \
    --save-every "$EVERY" --ckpt-dir "$DIR/$mode" --ckpt-async "$async" >"$TMP/$mode.log" 2>&1 || rc=$?
  grep -E '^(step|checkpoint)' "$TMP/$mode.log" | tail -4
  if [ $rc != 0 ]; then
    grep -v -e '^-*$' -e PMIx -e 'compression library' "$TMP/$mode.log" | tail -8
    echo "ckpt_async_train: the $mode run failed (exit $rc)"
  fi
  return $rc
}

# The figures, from the JSONL files (steps 1-3 are warm-up and left out of the step times): the
# synchronous run's as soon as it ends (a run cut short still reports them), then the comparison.
figures() {
  python3 - "$CSV" "$STEPS" "$what" "$@" <<'EOF'
import json, statistics as st, sys

def load(path):
    steps, saves, waits = {}, [], []
    for line in open(path):
        r = json.loads(line)
        if "ckpt_s" in r: saves.append((r["step"], r["ckpt_s"]))
        elif "ckpt_wait_s" in r: waits.append((r["step"], r["ckpt_wait_s"]))
        elif "loss" in r and "ms" in r: steps[r["step"]] = (r["ms"], r.get("ckpt_writing", 0))
    return steps, saves, waits

csv, last, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sync, ssaves, _ = load(sys.argv[4])
base = [ms for s, (ms, w) in sync.items() if s > 3]
if not ssaves or not base:
    sys.exit("ckpt_async_train: the synchronous run logged no save or no step after the warm-up")
sb, bm, bmean = st.median(v for _, v in ssaves), st.median(base), st.mean(base)
def fmt(v): return "%.1f ms" % v
if len(sys.argv) == 5:
    print("%s\nsync  saves (s): %s | steps (after 3): median %s mean %s (%d)"
          % (what, " ".join("%.3f" % v for _, v in ssaves), fmt(bm), fmt(bmean), len(base)))
    sys.exit(0)
asy, asaves, awaits = load(sys.argv[5])
if not asaves:
    sys.exit("ckpt_async_train: the asynchronous run logged no save")
writing = [ms for s, (ms, w) in asy.items() if s > 3 and w]
idle = [ms for s, (ms, w) in asy.items() if s > 3 and not w]
ab = st.median([v for _, v in asaves[1:]] or [asaves[0][1]])
wait_mid = sum(v for s, v in awaits if s != last)
drain = sum(v for s, v in awaits if s == last)
print("async saves (s): %s (the first allocates its staging)" % " ".join("%.3f" % v for _, v in asaves))
print("async waits (s): %s" % (" ".join("step %d: %.3f" % w for w in awaits) or "none"))
print("async steps without a staged save: median %s (%d)"
      % (fmt(st.median(idle)) if idle else "-", len(idle)))
if writing:
    wm, wmean = st.median(writing), st.mean(writing)
    part = ("steps while writing %d: median %s (%.3fx) mean %s (%.3fx)"
            % (len(writing), fmt(wm), wm / bm, fmt(wmean), wmean / bmean))
else:
    wm = wmean = float("nan")
    part = "no step ran while a save was staged (each committed within its save's step)"
print("ckpt_async_train: blocking %.3f s vs sync %.3f s (%.3f; first %.3f s) | %s | waited %.3f s "
      "at later saves, %.3f s at the end" % (ab, sb, ab / sb, asaves[0][1], part, wait_mid, drain))
with open(csv, "w") as f:
    f.write("sync_save_s,async_blocking_s,ratio,first_async_s,step_ms,step_writing_median_ms,"
            "step_writing_mean_ms,steps_writing,wait_s,drain_s\n")
    f.write("%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%d,%.4f,%.4f\n"
            % (sb, ab, ab / sb, asaves[0][1], bm, wm, wmean, len(writing), wait_mid, drain))
EOF
}

run sync 0 || exit 1
figures "$TMP/sync.jsonl" || exit 1
run async 1 || exit 1
figures "$TMP/sync.jsonl" "$TMP/async.jsonl"
