#!/usr/bin/env bash
# --tensorboard DIR: 3 steps on 2 ranks with a checkpoint, then a resumed run to step 6 in the
# same directory (a second event file); TensorBoard's own reader (scripts/ensure-tensorboard.sh:
# the tensorboard wheel, no TensorFlow) reads both, and every scalar equals the JSONL metrics of
# its run bit for bit (tests/gpt2/check_tensorboard.py): the step's, the validation's, every
# rank's largest memory per category, the checkpoints' blocking and waiting seconds.
# Then the same check on a train_llama run.
# usage: test_gpt2_tensorboard.sh TRAIN_GPT2 SRC MPIEXEC TRAIN_LLAMA
set -u
EXE=$1
SRC=$2
MPIEXEC=$3
LLAMA=$4
out=$(bash "$SRC/scripts/ensure-tensorboard.sh")
rc=$?
[ $rc -eq 0 ] || exit $rc
read -r PY SITE <<<"$out"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
TINY=(--layers 1 --channels 32 --heads 2 --seq 16 --batch 2 --eval-every 3 --eval-batches 2
  --sample-lines 0 --tensorboard "$W/tb")
"$MPIEXEC" --oversubscribe -np 2 "$EXE" "${TINY[@]}" --steps 6 --stop-after 3 --save-every 3 \
  --ckpt-dir "$W/ck" --metrics "$W/m1.jsonl" >"$W/first.log" 2>&1 ||
  { echo "FAIL first run"; tail -5 "$W/first.log"; exit 1; }
grep -q "view: tensorboard --logdir $W/tb" "$W/first.log" ||
  { echo "FAIL: no 'tensorboard --logdir' line"; exit 1; }
sleep 1 # the second file's name carries a later second
# The resumed run saves asynchronously, its write paced so that it outlasts steps: the JSONL and
# the events get its waits (ckpt_wait_s, ckpt/wait_s) and the steps it overlaps (ckpt_writing).
"$MPIEXEC" --oversubscribe -np 2 "$EXE" "${TINY[@]}" --steps 6 --resume "$W/ck" \
  --metrics "$W/m2.jsonl" --save-every 2 --ckpt-dir "$W/ck2" --ckpt-async 1 \
  --ckpt-write-rate 100K >"$W/second.log" 2>&1 ||
  { echo "FAIL resumed run"; tail -5 "$W/second.log"; exit 1; }
grep -q '"ckpt_writing":1' "$W/m2.jsonl" && grep -q '"step":4,"ckpt_wait_s"' "$W/m2.jsonl" ||
  { echo "FAIL: the asynchronous save's write overlaps no step, or its wait is not logged"; cat "$W/m2.jsonl"; exit 1; }
PYTHONPATH=$SITE "$PY" "$SRC/tests/gpt2/check_tensorboard.py" "$W/tb" "$W/m1.jsonl" "$W/m2.jsonl" ||
  exit 1
"$MPIEXEC" --oversubscribe -np 2 "$LLAMA" --layers 1 --hidden 32 --heads 2 --kv-heads 1 \
  --intermediate 64 --seq 16 --batch 2 --steps 4 --eval-every 2 --sample-lines 0 \
  --tensorboard "$W/tbl" --metrics "$W/l.jsonl" >"$W/llama.log" 2>&1 ||
  { echo "FAIL train_llama run"; tail -5 "$W/llama.log"; exit 1; }
PYTHONPATH=$SITE "$PY" "$SRC/tests/gpt2/check_tensorboard.py" "$W/tbl" "$W/l.jsonl"
