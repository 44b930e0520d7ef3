#!/usr/bin/env bash
# train_gpt2's command line, each case a tiny run (or none):
#   outputs   an --export/--metrics/--ckpt-dir path under a regular file is refused before
#             training; missing parent directories are created (mkdir -p)
#   demo      scripts/demo-gpt2.sh --summary keeps rank 0's memory table at the end
# usage: test_gpt2_args.sh TRAIN_GPT2 SRC
set -u
EXE=$1
SRC=$2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
TINY="--layers 1 --channels 32 --heads 2 --seq 16 --batch 2 --log-every 1"
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
# refused NAME WANT ARGS...: exit non-zero, WANT in the output, and no training started.
refused() {
  local name=$1 want=$2 out
  shift 2
  if out=$("$EXE" $TINY "$@" 2>&1); then
    bad "$name: accepted"
  elif [[ $out != *"$want"* ]]; then
    bad "$name: no \"$want\" in: $(tail -3 <<<"$out")"
  elif [[ $out == *"step "* ]]; then
    bad "$name: refused only after training"
  else
    ok "$name: $(grep -m1 error: <<<"$out")"
  fi
}

# ---- outputs
: >"$W/file"
refused "export under a file" "refused before training" --steps 2 --export "$W/file/m.safetensors"
refused "metrics under a file" "refused before training" --steps 2 --metrics "$W/file/m.jsonl"
refused "ckpt-dir under a file" "refused before training" --steps 2 --save-every 1 \
  --ckpt-dir "$W/file/ck"
refused "export is a directory" "is a directory" --steps 2 --export "$W"
if "$EXE" $TINY --steps 1 --sample-lines 0 --export "$W/a/b/m.safetensors" \
  --metrics "$W/c/d/m.jsonl" --plot "$W/e/p.svg" --save-every 1 --ckpt-dir "$W/f/g" \
  >"$W/mk.log" 2>&1 && [ -s "$W/a/b/m.safetensors" ] && [ -s "$W/a/b/config.json" ] &&
  [ -s "$W/c/d/m.jsonl" ] && [ -s "$W/e/p.svg" ] && [ -d "$W/f/g" ]; then
  ok "missing parent directories created"
else
  bad "missing parent directories: $(tail -3 "$W/mk.log")"
fi

# ---- the demo's summary keeps the memory table
"$EXE" $TINY --steps 1 --sample-chars 8 >"$W/demo.log" 2>&1 || bad "demo log run failed"
sum=$(bash "$SRC/scripts/demo-gpt2.sh" --summary "$W/demo.log")
table=$(sed -n '/^memory at the end of training, rank 0/,/^sampled text:/p' <<<"$sum")
if grep -q "^  category" <<<"$table" && grep -q "^  total" <<<"$table"; then
  ok "demo summary keeps the memory table"
else
  bad "demo summary lost the memory table:"; echo "$sum"
fi
exit $fail
