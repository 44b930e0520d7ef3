#!/usr/bin/env bash
# train_llama against Hugging Face transformers (CPU, fp32): for Llama (4 query / 2 key-value
# heads, untied head) and Qwen2 (q/k/v biases, tied head) random configurations, llama_ref.py
# writes the initial weights as an HF directory, the batches, the loss at init (labels=input_ids)
# and 5 torch.optim.AdamW steps; train_llama --init-safetensors runs the same batches
# (--batches) and --export's its weights; compare_llama_hf.py checks the init loss (1e-5), the
# step losses, the weights after 5 steps and the exported directory's logits (from_pretrained).
# Also a Llama with rope_theta 5e5 and "llama3" RoPE scaling, and the Llama with --grad-clip 1.0
# against clip_grad_norm_ (1 rank and 2 ranks at stage 3 each).
# Each model: 1 rank stage 3; 2 ranks stage 3 (one sequence each), also with --offload
# opt+params; 1 rank with 2 micro-steps,
# --recompute and --deterministic at stage 2, and the same split as 2 ranks x 1 at stage 3 with
# --deterministic, whose exports must be identical bit for bit. Tensor parallelism: --tp 2 on 2
# ranks (the heads and the MLP split, one data-parallel rank), on 4 ranks at stage 3 (2 x 2), and
# --tp 4 (1 query head a rank, the 2 kv heads replicated on 2 ranks each), and --tp 2 --sp 1
# (sequence parallelism) on 4, against the same reference; the embedding and head split over the
# vocabulary except in Llama's --sp run. A truncated weights file is refused with a message.
# With CUDA_PROBE (a GPU test, tests/gpu_tests.md): the same proof with --device cuda (fp32,
# cuBLASLt's fp32 compute, so the same bounds), 1 rank at stage 0 and 2 ranks at stage 3 sharing
# the GPU through NCCL (tests/with_hostid.sh), and for Llama and Qwen2 --tp 2 --sp 1 on 2 ranks;
# "SKIP: no CUDA device" (exit 0) without one.
# usage: test_train_llama_hf.sh TRAIN_LLAMA SOURCE_DIR [MPIEXEC [CUDA_PROBE]]   (77 = skipped)
set -u
EXE=$1
SRC=$2
MPI=${3:-mpirun}
PROBE=${4:-}
. "$SRC/tests/fixtures.sh"
[ -n "$PROBE" ] && zs_need_gpu "$PROBE"
zs_need_python "$SRC" transformers
zs_workdir
OPT="--steps 5 --lr 1e-3 --lr-min-frac 1 --warmup 0 --grad-clip 0 --weight-decay 0.1 --beta2 0.95
     --seq 16 --log-every 0 --sample-lines 0"
pass=0
fail=0
# run MODEL NAME NP ARGS...: train_llama on MODEL's reference, then the comparison.
run() {
  local model=$1 name=$2 np=$3
  shift 3
  local d=$W/$model.$name prefix=()
  [ -n "$PROBE" ] && prefix=("$SRC/tests/with_hostid.sh")
  if ! "$MPI" --oversubscribe -np "$np" "${prefix[@]}" "$EXE" $OPT --init-safetensors "$W/$model/init" \
    --batches "$W/$model/tokens.bin" --metrics "$d.jsonl" --export "$d.export" "$@" \
    >"$d.log" 2>&1; then
    echo "FAIL $model $name: train_llama exited non-zero"; tail -5 "$d.log"; fail=$((fail + 1))
    return
  fi
  if "$PY" "$SRC/tests/llama/compare_llama_hf.py" "$W/$model" "$d.jsonl" "$d.export" \
    >"$d.cmp" 2>&1 && tail -1 "$d.cmp" | grep -qx ok; then
    echo "ok   $model $name:"; sed 's/^/       /' "$d.cmp" | head -4; pass=$((pass + 1))
  else
    echo "FAIL $model $name:"; cat "$d.cmp"; fail=$((fail + 1))
  fi
}
# llama3: the llama preset with rope_theta 5e5 and "llama3" RoPE scaling (every branch of it);
# llama_clip: the llama preset with --grad-clip 1.0 (clip_grad_norm_; the gradient norm is ~2.5)
for model in llama qwen2 llama3 llama_clip; do
  clip=()
  [ "$model" = llama_clip ] && clip=(--grad-clip 1.0)
  if ! "$PY" "$SRC/tests/llama/reference/llama_ref.py" run "$W/$model" --arch "${model%_clip}" \
    --steps 5 --batch 2 --seq 16 --lr 1e-3 --beta2 0.95 --weight-decay 0.1 --seed 7 "${clip[@]}" \
    >"$W/$model.ref.log" 2>&1; then
    echo "FAIL $model: the reference failed"; cat "$W/$model.ref.log"; fail=$((fail + 1))
    continue
  fi
  if [ -n "$PROBE" ]; then
    run "$model" cuda_stage0_np1 1 --device cuda --stage 0 --batch 2 "${clip[@]}"
    run "$model" cuda_stage3_np2 2 --device cuda --stage 3 --batch 1 "${clip[@]}"
    # tensor and sequence parallelism over NCCL: the kernels' tp layers, the vocabulary-parallel
    # embedding and loss (Llama's head untied, Qwen2's tied)
    case $model in llama | qwen2)
      run "$model" cuda_tp2_sp_np2 2 --device cuda --stage 3 --batch 2 --tp 2 --sp 1 ;;
    esac
    continue
  fi
  if [ "$model" = llama3 ] || [ "$model" = llama_clip ]; then
    run "$model" stage3_np1 1 --stage 3 --batch 2 "${clip[@]}"
    run "$model" stage3_np2 2 --stage 3 --batch 1 "${clip[@]}"
    continue
  fi
  run "$model" stage3_np1 1 --stage 3 --batch 2
  run "$model" stage3_np2 2 --stage 3 --batch 1
  run "$model" stage3_np2_offload 2 --stage 3 --batch 1 --offload opt+params
  run "$model" stage2_micro2_recompute_det 1 --stage 2 --batch 1 --micro-steps 2 --recompute \
    --deterministic
  run "$model" stage3_np2_det 2 --stage 3 --batch 1 --deterministic
  run "$model" tp2_stage0_np2 2 --stage 0 --batch 2 --tp 2
  run "$model" tp2_stage3_np4 4 --stage 3 --batch 1 --tp 2
  # tp 4 over 2 kv heads: k/v whole on every rank, each computing with its head (2 ranks a head)
  run "$model" tp4_kv_stage1_np4 4 --stage 1 --batch 2 --tp 4
  # sequence parallelism: each tp rank keeps half of the tokens outside the heads and the MLP;
  # Llama's with the embedding and head replicated (--vocab-parallel 0), Qwen2's tied head
  # vocabulary-parallel (every other tp run is too: the vocabulary, 128, divides)
  vp=()
  [ "$model" = llama ] && vp=(--vocab-parallel 0)
  run "$model" tp2_sp_stage3_np4 4 --stage 3 --batch 1 --tp 2 --sp 1 "${vp[@]}"
  # --deterministic: 1 rank x 2 micro-steps (recomputed) and 2 ranks x 1 give the same bits.
  a=$W/$model.stage2_micro2_recompute_det.export/model.safetensors
  b=$W/$model.stage3_np2_det.export/model.safetensors
  if [ -f "$a" ] && [ -f "$b" ] && cmp -s "$a" "$b"; then
    echo "ok   $model: deterministic 1 rank x 2 micro-steps = 2 ranks x 1, bit for bit"
    pass=$((pass + 1))
  else
    echo "FAIL $model: the deterministic exports differ (1 x 2 against 2 x 1)"; fail=$((fail + 1))
  fi
done
# A truncated weights file: train_llama must refuse it with a message (exit 1), not crash.
if [ -z "$PROBE" ] && [ -d "$W/llama/init" ]; then
  cp -r "$W/llama/init" "$W/bad"
  head -c 5000 "$W/llama/init/model.safetensors" >"$W/bad/model.safetensors"
  zs_expect_refusal "truncated safetensors" train_llama "$W/bad.log" \
    "$EXE" $OPT --init-safetensors "$W/bad" --batches "$W/llama/tokens.bin" --batch 2
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
