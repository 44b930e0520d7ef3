#!/usr/bin/env bash
# train_gpt2 against the PyTorch reference (tests/gpt2/reference/gpt2_ref.py), fp32 CPU:
# logits, losses and every gradient of one micro-batch, to 1e-4 relative, including the tied
# embedding (the LM head's share of the wte gradient alone, and lookup + head together).
#   1. stage 3, 1 rank, GPT-2 random init, padded vocabulary (300 -> 320)
#   2. stage 3, 2 ranks (each rank's own micro-batch)
#   3. stage 2, 2 ranks, --deterministic --recompute (staged gradients, recomputed blocks)
#   4. stage 3, 1 rank, weights from a Hugging Face-layout safetensors file written by the
#      reference (F32 + BF16 + F16 tensors, Conv1D transposes): loaded weights must be exact
#   5. a truncated safetensors file must make train_gpt2 fail cleanly (exit 1, a message)
# usage: test_gpt2_ref.sh TRAIN_GPT2 SOURCE_DIR [MPIEXEC]
set -u
EXE=$1
SRC=$2
MPI=${3:-mpirun}
REF=$SRC/tests/gpt2/reference/gpt2_ref.py
# A Python with torch (Debian's, installed when missing; the GPU machine's python3). 77 = skipped
# (ctest SKIP_RETURN_CODE): none here and no package registry to install one from.
. "$SRC/tests/fixtures.sh"
zs_need_python "$SRC" torch
zs_workdir
TINY="--steps 1 --layers 2 --channels 32 --heads 4 --seq 16 --batch 2 --vocab 300
      --sample-lines 0 --val-frac 0 --log-every 0"
pass=0
fail=0
# run NAME NP ARGS... : train_gpt2 with --dump-grads, then the reference check.
run() {
  local name=$1 np=$2
  shift 2
  local d=$W/$name
  mkdir -p "$d"
  if ! "$MPI" --oversubscribe -np "$np" "$EXE" $TINY --dump-grads "$d" "$@" >"$d.log" 2>&1; then
    echo "FAIL $name: train_gpt2 exited non-zero"; tail -5 "$d.log"; fail=$((fail + 1)); return
  fi
  local extra=()
  [ -n "${ST:-}" ] && extra=(--safetensors "$ST")
  if "$PY" "$REF" check "$d" "${extra[@]}" >"$d.ref" 2>&1; then
    echo "ok   $name: $(tail -1 "$d.ref")"; pass=$((pass + 1))
  else
    echo "FAIL $name:"; cat "$d.ref"; fail=$((fail + 1))
  fi
}
ST= run stage3_np1 1 --stage 3
ST= run stage3_np2 2 --stage 3
ST= run stage2_np2_det_recompute 2 --stage 2 --deterministic --recompute
"$PY" "$REF" write-safetensors "$W/hf.safetensors" --layers 2 --channels 32 --vocab 300 \
  --positions 24 >/dev/null || { echo "FAIL: cannot write the safetensors file"; exit 1; }
ST=$W/hf.safetensors run safetensors_stage3_np1 1 --stage 3 --init-safetensors "$W/hf.safetensors"
# A truncated file: the loader must refuse it with a message, not crash.
head -c 5000 "$W/hf.safetensors" >"$W/bad.safetensors"
zs_expect_refusal "truncated safetensors" train_gpt2 "$W/bad.log" \
  "$EXE" $TINY --init-safetensors "$W/bad.safetensors"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
