#!/usr/bin/env bash
# The Llama example's Hugging Face I/O against transformers itself (hf_io_check.py):
#   1. directories saved by save_pretrained (Llama with GQA and llama3 RoPE scaling, Qwen2 with
#      biases and a tied head, Mistral with its own head_dim; F32, F16, BF16; sharded with an
#      index and as one file) read by the C reader (llama_io_tool dump): every tensor equals
#      torch's, the parsed config agrees with the model transformers builds
#   2. directories written by the C writer (llama_io_tool copy: F32, F16, BF16, sharded and not;
#      tensors read as the engine's fp32 or bf16) loaded by from_pretrained: no missing or
#      unexpected keys, tensors equal to torch's own dtype conversion of the source, equal logits
# Python starts three times (save, compare, load take many items each).
# usage: test_llama_hf.sh LLAMA_IO_TOOL SOURCE_DIR     (77 = skipped: no transformers to be had)
set -u
TOOL=$1
SRC=$2
CHK=$SRC/tests/llama/hf_io_check.py
. "$SRC/tests/fixtures.sh"
zs_need_python "$SRC" transformers
zs_workdir
fail=0
save=() cmp=() load=()
for arch in llama qwen2 mistral; do
  for dt in float32 float16 bfloat16; do
    for shard in 20KB 10GB; do
      save+=("$W/hf_${arch}_${dt}_$shard" $arch $dt $shard)
    done
  done
done
"$PY" "$CHK" save "${save[@]}" || fail=$((fail + 1))
for ((i = 0; i < ${#save[@]}; i += 4)); do
  d=${save[i]}
  if "$TOOL" dump "$d" "$d.dump" >"$d.log" 2>&1; then
    cmp+=("$d" "$d.dump")
  else
    echo "FAIL read $(basename "$d"): llama_io_tool dump: $(cat "$d.log")"; fail=$((fail + 1))
  fi
done
"$PY" "$CHK" compare "${cmp[@]}" || fail=$((fail + 1))
# The writer: from each F32 directory, in each dtype, sharded (3000 bytes) and one file; and the
# engine's bf16 (tensors read as bf16, written as F32).
for arch in llama qwen2 mistral; do
  ref=$W/hf_${arch}_float32_20KB
  for spec in F32:float32:f32 F16:float16:f32 BF16:bfloat16:f32 F32:float32:bf16; do
    IFS=: read -r fdt tdt via <<<"$spec"
    for shard in 3000 0; do
      o=$W/out_${arch}_${fdt}_${via}_$shard
      if "$TOOL" copy "$ref" "$o" "$fdt" $shard $via >"$o.log" 2>&1; then
        load+=("$o" "$ref" "$tdt" "$via")
      else
        echo "FAIL write $(basename "$o"): llama_io_tool copy: $(cat "$o.log")"; fail=$((fail + 1))
      fi
    done
  done
done
"$PY" "$CHK" load "${load[@]}" || fail=$((fail + 1))
ls "$W/out_llama_F32_f32_3000" | grep -q index.json ||
  { echo "FAIL: a 3000-byte shard limit wrote no index"; fail=$((fail + 1)); }
ls "$W/hf_llama_float32_20KB" | grep -q index.json ||
  { echo "FAIL: the 20KB save was not sharded"; fail=$((fail + 1)); }
echo "$(( ${#cmp[@]} / 2 )) directories read, $(( ${#load[@]} / 4 )) written; $fail failure(s)"
[ "$fail" -eq 0 ]
