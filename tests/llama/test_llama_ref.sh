#!/usr/bin/env bash
# The Hugging Face reference for the Llama example (reference/llama_ref.py) checked on its own
# (check_llama_ref.py): Llama (4 query / 2 key-value heads, gradient clipping) and Qwen2 (q/k/v
# biases, tied head), 3 AdamW steps each: loss at init about ln(vocab), the saved init weights
# reproduce it, and losses and final weights equal an independent AdamW loop.
# usage: test_llama_ref.sh SOURCE_DIR     (77 = skipped: no transformers to be had)
set -u
SRC=$1
. "$SRC/tests/fixtures.sh"
zs_need_python "$SRC" transformers
zs_workdir
fail=0
"$PY" "$SRC/tests/llama/reference/llama_ref.py" run "$W/llama" --arch llama --steps 3 --lr 3e-3 \
  --grad-clip 0.5 --seed 7 || fail=1
"$PY" "$SRC/tests/llama/reference/llama_ref.py" run "$W/qwen2" --arch qwen2 --steps 3 --lr 3e-3 \
  --batch 3 --seq 8 --seed 11 || fail=1
for m in llama qwen2; do
  [ -f "$W/$m/losses.json" ] && { "$PY" "$SRC/tests/llama/check_llama_ref.py" "$W/$m" || fail=1; }
done
exit $fail
