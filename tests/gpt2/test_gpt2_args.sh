#!/usr/bin/env bash
# train_gpt2's command line, each case a tiny run (or none):
#   outputs   an --export/--metrics/--ckpt-dir path under a regular file is refused before
#             training; missing parent directories are created (mkdir -p)
#   help      every option shows its default; --beta1, --eps, --lr-schedule are listed
#   optimizer --grad-clip < 0 refused; --warmup >= --steps warns once on stderr; --beta1/--eps
#             reach the engine (the defaults' values give the default run's losses, others not);
#             --optimizer sgd|lion and --momentum reach it, an unknown optimizer is refused;
#             --optimizer muon puts the block's matrices in a Muon group at --muon-lr;
#             --grad-accum-dtype fp32 changes a bf16 run with micro-steps
#   sample    none by default on a token file, on request (--sample-lines 1) there; text: yes
#   nvme      --nvme-path DIR (created) with --offload-host-bytes 5M puts state on the tier
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
refused "a write rate that is no size" "--ckpt-write-rate" --steps 2 --ckpt-write-rate fast
if "$EXE" $TINY --steps 1 --sample-lines 0 --export "$W/a/b/m.safetensors" \
  --metrics "$W/c/d/m.jsonl" --plot "$W/e/p.svg" --save-every 1 --ckpt-dir "$W/f/g" \
  >"$W/mk.log" 2>&1 && [ -s "$W/a/b/m.safetensors" ] && [ -s "$W/a/b/config.json" ] &&
  [ -s "$W/c/d/m.jsonl" ] && [ -s "$W/e/p.svg" ] && [ -d "$W/f/g" ]; then
  ok "missing parent directories created"
else
  bad "missing parent directories: $(tail -3 "$W/mk.log")"
fi

# ---- help: the defaults
help=$("$EXE" --help)
missing=0
for want in "--batch B=4" "--seq T=64" "--steps S=100" "--lr F=1e-3" "--stage 0..3 (default 3)" \
  "--beta1 F=0.9" "--beta2 F=0.95" "--eps F=1e-8" "--grad-clip F=1" "--warmup N (default S/20" \
  "--lr-schedule cosine|linear|constant|wsd (default cosine)" "--nvme-path DIR" \
  "--offload-host-bytes BYTES" "--optimizer adamw|sgd|lion|muon|adafactor (default adamw" "--muon-lr F=0.02" "--momentum F=0.9"; do
  [[ $help == *"$want"* ]] || { bad "--help lacks \"$want\""; missing=1; }
done
[ $missing = 0 ] && ok "--help shows the defaults"

# ---- optimizer options
refused "negative grad-clip" "--grad-clip -1" --steps 1 --grad-clip -1
refused "beta1 of 1" "--beta1 and --beta2" --steps 1 --beta1 1
"$EXE" $TINY --steps 2 --warmup 5 --sample-lines 0 >"$W/wu.out" 2>"$W/wu.err" ||
  bad "warmup > steps: the run failed"
n=$(grep -c "warning: --warmup 5 >= --steps 2" "$W/wu.err")
[ "$n" = 1 ] && ok "warmup > steps warns once" || bad "warmup > steps: $n warnings"
losses() { "$EXE" $TINY --steps 3 --sample-lines 0 "$@" 2>&1 | grep -o "loss [0-9.]*"; }
base=$(losses)
same=$(losses --beta1 0.9 --eps 1e-8)
other=$(losses --beta1 0.5 --eps 1e-3)
if [ -n "$base" ] && [ "$base" = "$same" ] && [ "$base" != "$other" ]; then
  ok "--beta1/--eps reach the optimizer"
else
  bad "--beta1/--eps: default [$base] same [$same] other [$other]"
fi
# fp32 accumulation of bf16 gradients reaches the engine: the same run, other losses from step 2 on
acc_b=$(losses --dtype bf16 --micro-steps 4 --lr 3e-2)
acc_f=$(losses --dtype bf16 --micro-steps 4 --lr 3e-2 --grad-accum-dtype fp32)
if [ -n "$acc_b" ] && [ -n "$acc_f" ] && [ "$acc_b" != "$acc_f" ]; then
  ok "--grad-accum-dtype fp32 reaches the engine"
else
  bad "--grad-accum-dtype: bf16 [$acc_b] fp32 [$acc_f]"
fi
refused "unknown optimizer" "--optimizer: no optimizer is named 'adam': use one of adamw, sgd, lion" --steps 1 --optimizer adam
sgd=$(losses --optimizer sgd --lr 0.1)
sgd2=$(losses --optimizer sgd --lr 0.1 --momentum 0.5)
lion=$(losses --optimizer lion --lr 1e-4)
if [ -n "$sgd" ] && [ -n "$lion" ] && [ "$sgd" != "$base" ] && [ "$sgd" != "$sgd2" ] &&
  [ "$lion" != "$base" ] && [ "$lion" != "$sgd" ]; then
  ok "--optimizer sgd|lion and --momentum reach the engine"
else
  bad "--optimizer: adamw [$base] sgd [$sgd] sgd m0.5 [$sgd2] lion [$lion]"
fi

muon=$(losses --optimizer muon)
muon2=$(losses --optimizer muon --muon-lr 0.05)
groups=$("$EXE" $TINY --steps 1 --sample-lines 0 --optimizer muon 2>&1 | grep -c "group 1 on muon")
if [ -n "$muon" ] && [ "$muon" != "$base" ] && [ "$muon" != "$muon2" ] && [ "$groups" -ge 1 ]; then
  ok "--optimizer muon and --muon-lr reach the engine (a Muon group)"
else
  bad "--optimizer muon: adamw [$base] muon [$muon] muon-lr 0.05 [$muon2] info lines [$groups]"
fi

# ---- sample: text by default, token files only on request
python3 - "$W/tok.bin" <<'PY'
import struct, sys
n = 4000
hdr = [20240520, 1, n] + [0] * 253
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", *hdr))
    f.write(struct.pack("<%dH" % n, *[(i * 7 + i // 13) % 300 for i in range(n)]))
PY
"$EXE" $TINY --steps 0 --data "$W/tok.bin" >"$W/s1.log" 2>&1 || bad "token file run failed"
"$EXE" $TINY --steps 0 --data "$W/tok.bin" --sample-lines 1 --sample-chars 8 >"$W/s2.log" 2>&1 ||
  bad "token file run with --sample-lines 1 failed"
"$EXE" $TINY --steps 0 --sample-chars 8 >"$W/s3.log" 2>&1 || bad "text run failed"
if ! grep -q -- "---- sample" "$W/s1.log" && grep -q -- "---- sample" "$W/s2.log" &&
  grep -q -- "---- sample" "$W/s3.log"; then
  ok "samples: text by default, token files on request"
else
  bad "samples: token default $(grep -c -- '---- sample' "$W/s1.log"), token asked" \
    "$(grep -c -- '---- sample' "$W/s2.log"), text $(grep -c -- '---- sample' "$W/s3.log")"
fi

# ---- the NVMe tier from flags (the directory is created)
# C=256: the block's 9 MB of optimizer state is over the 5M host cap (the arena's floor is ~4 MiB)
if ZS_OFFLOAD_CHUNK=2048 "$EXE" $TINY --channels 256 --steps 1 --sample-lines 0 --offload opt \
  --offload-host-bytes 5M --nvme-path "$W/nvme/x" >"$W/nv.log" 2>&1 &&
  grep -q "nvme: 1 of 3 units" "$W/nv.log"; then
  ok "--nvme-path and --offload-host-bytes 5M"
else
  bad "--nvme-path: $(grep -m1 "nvme\|error" "$W/nv.log")"
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
