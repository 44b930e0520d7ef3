#!/usr/bin/env bash
# train_gpt2's checkpoints and Hugging Face interop, fp32 CPU:
#   1. resume: 6 steps straight (1 rank, 2 micro-steps) = 3 steps on 2 ranks at stage 3
#      (--stop-after 3 --save-every 3), then --resume on 1 rank at stage 0: the same weights, bit
#      for bit (--deterministic), the same lr schedule and data
#      the checkpoint folder is named by step (ckpt-000000000003), and one named by save count
#      (older versions) still resumes
#   2. --export: transformers' GPT2LMHeadModel.from_pretrained loads model.safetensors +
#      config.json as is, and its logits equal zshard's (--dump-logits) to 1e-5 relative
#   3. --init-safetensors of the export (heads from its config.json): the same weights, and its
#      re-export's config.json keeps the fields the example does not read (an eos list, ...)
#   4. refusals: no config.json and no --heads; an lm_head.weight that is not wte
# usage: test_gpt2_ckpt.sh TRAIN_GPT2 SOURCE_DIR [MPIEXEC]
set -u
EXE=$1
SRC=$2
MPI=${3:-mpirun}
CHK=$SRC/tests/gpt2/check_hf_export.py
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
TINY="--layers 2 --channels 32 --heads 4 --seq 16 --batch 2 --vocab 300 --sample-lines 0
      --val-frac 0.1 --log-every 0 --lr 3e-3"
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# runs NAME NP ARGS...: train_gpt2 under mpirun, log in $W/NAME.log
runs() {
  local name=$1 np=$2
  shift 2
  "$MPI" --oversubscribe -np "$np" "$EXE" $TINY "$@" >"$W/$name.log" 2>&1
}

mkdir -p "$W/straight" "$W/resumed" "$W/hf" "$W/reloaded" "$W/cfgless"
runs straight 1 --steps 6 --micro-steps 2 --deterministic --dump-weights "$W/straight" ||
  { bad "straight run"; tail -5 "$W/straight.log"; }
runs first 2 --steps 6 --stop-after 3 --stage 3 --deterministic --save-every 3 --ckpt-dir "$W/ck" ||
  { bad "first half"; tail -5 "$W/first.log"; }
runs second 1 --steps 6 --micro-steps 2 --stage 0 --deterministic --resume "$W/ck" \
  --dump-weights "$W/resumed" || { bad "second half"; tail -5 "$W/second.log"; }
if grep -q "resumed from .* at step 3" "$W/second.log" && diff -r "$W/straight" "$W/resumed" >/dev/null &&
  [ -n "$(ls "$W/resumed")" ]; then
  ok "resume 2 ranks stage 3 -> 1 rank stage 0 at step 3: $(ls "$W/resumed" | wc -l) weight files bit-identical"
else
  bad "resume: weights differ from the straight run (or no resume)"
fi
# Checkpoint folders are named by step (the save at step 3 is ckpt-000000000003); a folder named
# by save count (older versions: ckpt-000000000001) still resumes, from the directory.
if [ -f "$W/ck/ckpt-000000000003/manifest.json" ]; then
  ok "the checkpoint of step 3 is ckpt-000000000003"
else
  bad "checkpoint folder not named by step: $(ls "$W/ck")"
fi
mkdir -p "$W/old" "$W/resumed_old"
cp -r "$W/ck/ckpt-000000000003" "$W/old/ckpt-000000000001"
runs second_old 1 --steps 6 --micro-steps 2 --stage 0 --deterministic --resume "$W/old" \
  --dump-weights "$W/resumed_old" || { bad "resume from an old-style folder"; tail -5 "$W/second_old.log"; }
if grep -q "at step 3" "$W/second_old.log" && diff -r "$W/straight" "$W/resumed_old" >/dev/null; then
  ok "an old-style folder (numbered by save count) resumes bit-identically"
else
  bad "resume from an old-style folder differs"
fi

# A Python with torch + transformers (installed when missing; the GPU machine's python3).
PY=$(bash "$SRC/scripts/ensure-transformers.sh")
case $? in
  0) ;;
  77)
    echo "SKIP: transformers is not available and no package registry can be reached"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ] && exit 77
    exit 1
    ;;
  *) bad "transformers is missing and installing it failed"; echo "$pass passed, $fail failed"; exit 1 ;;
esac
runs export 2 --steps 3 --stage 3 --export "$W/hf/model.safetensors" --dump-logits "$W/logits.bin" \
  --dump-weights "$W/hf" || { bad "export run"; tail -5 "$W/export.log"; }
if "$PY" "$CHK" check "$W/hf" "$W/logits.bin" >"$W/check.log" 2>&1; then
  ok "export: $(grep logits: "$W/check.log")"
else
  bad "export check:"; cat "$W/check.log"
fi
# Reload the export without --heads (config.json says n_head) and dump the weights again; with
# fields the example does not read added to its config.json, which the re-export carries.
"$PY" - "$W/hf/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(eos_token_id=[50256, 7], bos_token_id=50256, my_extra={"a": [1, "x"]})
json.dump(c, open(sys.argv[1], "w"))
PY
runs reload 1 --steps 0 --layers 0 --heads 0 --init-safetensors "$W/hf/model.safetensors" \
  --dump-weights "$W/reloaded" --export "$W/reexport/model.safetensors" ||
  { bad "reload"; tail -5 "$W/reload.log"; }
if "$PY" - "$W/reexport/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["eos_token_id"] == [50256, 7] and c["bos_token_id"] == 50256, c
assert c["my_extra"] == {"a": [1, "x"]} and c["model_type"] == "gpt2" and c["n_head"] > 0, c
PY
then
  ok "the re-export's config.json carries the source's fields (an eos list stays a list)"
else
  bad "the re-export's config.json lost the source's fields"
fi
if diff <(cd "$W/hf" && ls w.*) <(cd "$W/reloaded" && ls w.*) >/dev/null &&
  for f in "$W"/reloaded/w.*; do cmp -s "$f" "$W/hf/$(basename "$f")" || exit 1; done; then
  ok "--init-safetensors of the export (heads from config.json): the same weights"
else
  bad "--init-safetensors of the export gives other weights"
fi
cp "$W/hf/model.safetensors" "$W/cfgless/model.safetensors"
if runs noheads 1 --steps 0 --heads 0 --init-safetensors "$W/cfgless/model.safetensors"; then
  bad "no config.json and no --heads was accepted"
elif grep -q "number of attention heads is not known" "$W/noheads.log"; then
  ok "no config.json and no --heads refused: $(grep -m1 error: "$W/noheads.log" | cut -c1-120)"
else
  bad "no-heads refusal without the message"; tail -3 "$W/noheads.log"
fi
"$PY" "$CHK" untie "$W/hf/model.safetensors" "$W/cfgless/untied.safetensors" >/dev/null 2>&1
if runs untied 1 --steps 0 --init-safetensors "$W/cfgless/untied.safetensors"; then
  bad "an untied lm_head.weight was accepted"
elif grep -q "lm_head.weight that is not wte" "$W/untied.log"; then
  ok "untied lm_head.weight refused"
else
  bad "untied head refusal without the message"; tail -3 "$W/untied.log"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
