#!/usr/bin/env bash
# train_llama refuses at start, with a sentence and before any training, what it cannot finish:
#   1. --device cuda with head_dim > 128 (the CUDA attention kernels' limit; no GPU needed, the
#      check comes before the device is touched)
#   2. --export into a directory holding an earlier export's weights (left as it was)
#   3. an output path (--export, --metrics, --ckpt-dir) under a regular file, before training;
#      missing parent directories of an output are created (mkdir -p)
#   4. --sp 1 without --tp; --vocab-parallel 2; --tp 2 over 3 key-value heads (tensor parallelism
#      splits them evenly, or replicates each
#      over an equal number of ranks)
# usage: test_train_llama_refusals.sh TRAIN_LLAMA
set -u
EXE=$1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
SHAPE="--arch llama --layers 1 --intermediate 48 --kv-heads 1 --max-pos 32 --seq 16 --batch 1
       --steps 0 --sample-lines 0"
# expect NAME WANT ARGS...: train_llama must exit non-zero with WANT in its output.
expect() {
  local name=$1 want=$2
  shift 2
  local out
  if out=$("$EXE" $SHAPE "$@" 2>&1); then
    echo "FAIL $name: train_llama succeeded"; fail=1
  elif [[ $out == *"$want"* ]]; then
    echo "ok   $name: $(grep -m1 error: <<<"$out")"
  else
    echo "FAIL $name: no \"$want\" in:"; echo "$out" | tail -5; fail=1
  fi
}
expect "head_dim 256 on cuda" "support head_dim <= 128" --device cuda --hidden 256 --heads 1 \
  --head-dim 256
expect "sp without tp" "--sp 1 splits each sequence's tokens over the tp group" --hidden 32 \
  --heads 2 --sp 1
expect "tp 2 over 3 key-value heads" "--tp 2: tensor parallelism splits" --hidden 48 --heads 6 \
  --kv-heads 3 --tp 2
expect "--vocab-parallel 2" "--vocab-parallel 2: 0 or 1" --hidden 32 --heads 2 --vocab-parallel 2
mkdir "$W/old"
echo stale >"$W/old/model-00001-of-00002.safetensors"
expect "export over an earlier one" "already holds model-00001-of-00002.safetensors" \
  --hidden 32 --heads 2 --export "$W/old"
if [ "$(cat "$W/old/model-00001-of-00002.safetensors")" != stale ] || [ -e "$W/old/config.json" ]; then
  echo "FAIL the refused export changed the directory"; fail=1
fi
# the same export into a fresh directory works (the refusal is not of every --export)
if "$EXE" $SHAPE --hidden 32 --heads 2 --export "$W/new" >"$W/new.log" 2>&1 &&
  [ -f "$W/new/model.safetensors" ]; then
  echo "ok   export into a new directory"
else
  echo "FAIL export into a new directory:"; tail -5 "$W/new.log"; fail=1
fi
: >"$W/file"
expect "export under a file" "refused before training" --hidden 32 --heads 2 --steps 2 \
  --export "$W/file/hf"
expect "metrics under a file" "refused before training" --hidden 32 --heads 2 --steps 2 \
  --metrics "$W/file/m.jsonl"
expect "ckpt-dir under a file" "refused before training" --hidden 32 --heads 2 --steps 2 \
  --save-every 1 --ckpt-dir "$W/file/ck"
if "$EXE" $SHAPE --hidden 32 --heads 2 --export "$W/a/b/hf" --metrics "$W/c/d/m.jsonl" \
  >"$W/mk.log" 2>&1 && [ -f "$W/a/b/hf/model.safetensors" ] && [ -f "$W/c/d/m.jsonl" ]; then
  echo "ok   missing parent directories created"
else
  echo "FAIL missing parent directories:"; tail -5 "$W/mk.log"; fail=1
fi
exit $fail
