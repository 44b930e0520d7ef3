#!/usr/bin/env bash
# bf16 params on the CPU device (the kernels compute in fp32 on widened copies, common/widen.h):
# 1. --dtype bf16 (fp32 master) against --dtype fp32, the same 20 steps: every step's loss within
#    0.5% relative. Why that bound: the fp32 master's updates are the same arithmetic; what
#    differs is that the forward and backward read the master rounded to bf16 (each weight off
#    by <= 2^-9 = 0.2% relative) and the gradients are rounded to bf16 (<= 0.2% relative each,
#    unbiased); a loss is a smooth function of the weights, so these move it by a fraction of a
#    percent (measured 5.3e-4 relative); broken widening (no gradient, wrong tensor) moves it by far
#    more than 0.5% within a few steps.
# 2. The memory table stays true: bf16's "activations" are fp32's plus the widen scratch, 2 x 4
#    bytes per element of the largest unit (the program's "largest unit" line).
# 3. --master lean --dtype bf16 --deterministic (the lean contract: results identical across
#    world sizes, stages and splits): 1 rank x 2 micro-steps and 2 ranks x 1 at stage 3, and 1
#    rank at stage 0, end with byte-identical weights (--dump-weights), which differ from the
#    fp32-master bf16 run's (lean is on).
# 4. --master lean with --dtype fp32 is refused with a sentence.
# usage: test_gpt2_bf16_cpu.sh TRAIN_GPT2 [MPIEXEC]
set -u
EXE=$1
MPI=${2:-mpirun}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# An address-space cap (8 GB) on the runs; not under AddressSanitizer, whose shadow memory needs
# terabytes of address space (ulimit -v makes it abort at start).
if ! ldd "$EXE" 2>/dev/null | grep -q libasan; then ulimit -v 8000000; fi
ARGS="--steps 20 --layers 2 --channels 64 --heads 4 --seq 32 --batch 2 --lr 3e-3 --warmup 2
      --sample-lines 0 --val-frac 0 --log-every 1"
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# train NAME NP ARGS...
train() {
  local name=$1 np=$2
  shift 2
  mkdir -p "$W/$name"
  if ! "$MPI" --oversubscribe -np "$np" "$EXE" $ARGS --metrics "$W/$name.jsonl" \
    --dump-weights "$W/$name" "$@" >"$W/$name.log" 2>&1; then
    bad "$name: train_gpt2 exited non-zero"; tail -5 "$W/$name.log"; return 1
  fi
}
train f32 1 --dtype fp32 --micro-steps 2
train b16 1 --dtype bf16 --micro-steps 2
# 1. losses step by step
if python3 - "$W/f32.jsonl" "$W/b16.jsonl" >"$W/cmp.out" 2>&1 <<'PY'
import json, sys
def losses(p):
    return [e["loss"] for e in map(json.loads, open(p)) if "step" in e and "event" not in e]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert len(a) == len(b) == 20, (len(a), len(b))
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
print(f"max relative loss difference {worst:.2e} over {len(a)} steps (bound 5e-3)")
sys.exit(0 if worst <= 5e-3 else 1)
PY
then ok "bf16 params vs fp32: $(cat "$W/cmp.out")"; else bad "bf16 params vs fp32:"; cat "$W/cmp.out"; fi
# 2. the widen scratch in the printed activations
act() { sed -n 's/.*"event":"memory","when":"start".*"activations":\([0-9]*\).*/\1/p' "$W/$1.jsonl" | head -1; }
largest=$(sed -n 's/^largest unit: \([0-9]*\) params.*/\1/p' "$W/b16.log")
if [ -n "$largest" ] && [ -n "$(act f32)" ] && [ "$(act b16)" = $(($(act f32) + 8 * largest)) ]; then
  ok "activations: bf16 $(act b16) = fp32 $(act f32) + 8 x largest unit $largest"
else
  bad "activations: bf16 '$(act b16)' != fp32 '$(act f32)' + 8 x largest unit '$largest'"
fi
# 3. lean: one answer across splits and stages
LEAN="--dtype bf16 --master lean --moment-dtype bf16 --deterministic"
train lean_np1 1 $LEAN --stage 3 --micro-steps 2
train lean_np2 2 $LEAN --stage 3 --micro-steps 1
train lean_s0 1 $LEAN --stage 0 --micro-steps 2
for r in lean_np2 lean_s0; do
  if [ "$(ls "$W/$r" | wc -l)" -ge 10 ] && diff -r "$W/lean_np1" "$W/$r" >/dev/null; then
    ok "lean: $r = lean_np1 bit for bit ($(ls "$W/$r" | wc -l) tensors)"
  else
    bad "lean: $r differs from lean_np1 (or dumped nothing)"
  fi
done
if diff -r "$W/lean_np1" "$W/b16" >/dev/null; then bad "lean = fp32-master bf16: lean is not on"
else ok "lean differs from the fp32-master bf16 run"; fi
# 4. refusal
if "$EXE" $ARGS --master lean --dtype fp32 >"$W/bad.log" 2>&1; then
  bad "--master lean --dtype fp32 ran"
elif grep -q "master lean needs --dtype bf16" "$W/bad.log"; then
  ok "--master lean --dtype fp32 refused: $(tail -1 "$W/bad.log" | cut -c1-90)"
else
  bad "--master lean --dtype fp32: no sentence"; cat "$W/bad.log"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
