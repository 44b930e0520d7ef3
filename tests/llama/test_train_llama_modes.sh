#!/usr/bin/env bash
# train_llama's capacity flags on a small random Llama (CPU, fp32 params, the bundled text),
# each against the default run (fp32 master, fp32 moments, everything on the device):
# --master params exports the same bits (the fp32 params are the master: the same arithmetic);
# --offload-budget with 2 of 4 units on the host exports the same bits (placement moves bytes,
# not arithmetic); --moment-dtype bf16 stays close (bound below) but is not identical;
# --freeze 1,head leaves layer 0, the final norm and the LM head exactly as initialized (1 rank
# and 2 ranks at stage 3) while the other tensors train, and its loss differs from the default's;
# a bad --freeze item and an unknown --master are refused with a message. bf16 params on the CPU
# device (fp32 compute on widened units): the final loss within 0.5% of fp32's (the argument of
# tests/gpt2/test_gpt2_bf16_cpu.sh), for the untied and the tied (two widen slots) head; and
# --master lean --deterministic exports the same bits from 1 rank x 2 micro-steps and 2 ranks x 1,
# and with its state offloaded (--offload opt+params) or budgeted (--offload-budget); so does
# --master remainder with --offload opt. --tp 2 gives the default's weights within fp32 rounding,
# with the embedding and head split over the vocabulary (alone and with --sp 1) or replicated.
# --optimizer muon at --tp 2 trains the 1-rank Muon run's weights, and zshard-plan bounds its
# buffer peak; so does --optimizer adafactor at --tp 2, with the optimizer bytes worked out by hand.
# usage: test_train_llama_modes.sh TRAIN_LLAMA SOURCE_DIR MPIEXEC ZSHARD_PLAN
set -u
EXE=$1
SRC=$2
MPI=$3
PLAN=$4
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# An address-space cap (8 GB) on the runs; not under AddressSanitizer, whose shadow memory needs
# terabytes of address space (ulimit -v makes it abort at start).
if ! ldd "$EXE" 2>/dev/null | grep -q libasan; then ulimit -v 8000000; fi
CMP="python3 $SRC/tests/llama/st_compare.py"
# 6 steps, lr 3e-3 decaying: the learning rates sum to 9.9e-3.
OPT="--layers 2 --hidden 64 --intermediate 128 --heads 4 --kv-heads 2 --seq 32 --steps 6
     --lr 3e-3 --warmup 0 --sample-lines 0 --log-every 0 --text $SRC/examples/data/genesis_kjv.txt"
pass=0
fail=0
# train NAME NP ARGS...: a run exporting to $W/NAME (its log $W/NAME.log).
train() {
  local name=$1 np=$2
  shift 2
  if ! "$MPI" --oversubscribe -np "$np" "$EXE" $OPT --export "$W/$name" "$@" >"$W/$name.log" 2>&1
  then
    echo "FAIL $name: train_llama exited non-zero"; tail -5 "$W/$name.log"; fail=$((fail + 1))
    return 1
  fi
}
# check WHAT COMMAND...: one verdict.
check() {
  local what=$1
  shift
  if "$@" >"$W/check.out" 2>&1; then
    echo "ok   $what"; pass=$((pass + 1))
  else
    echo "FAIL $what"; cat "$W/check.out"; fail=$((fail + 1))
  fi
}
final() { sed -n 's/^final loss \([0-9.]*\) .*/\1/p' "$W/$1.log"; }
st() { echo "$W/$1/model.safetensors"; }

train init 1 --batch 2 --steps 0
train base 1 --batch 2
# --tp 2 on 2 ranks (one data-parallel rank: the same batches): the default's weights up to the
# order of fp32 sums, which Adam's normalised steps carry at most lr-sized where a gradient is near
# zero (measured 1.1e-5 at most; with the attention input's tp sum left out, 3e-3 to 9e-3).
train tp2 2 --batch 2 --tp 2 --stage 3 &&
  check "--tp 2 = default within 1e-4" $CMP "$(st base)" "$(st tp2)" close . 1e-4
# The same with sequence parallelism and the vocabulary-parallel head (untied: the HF proof's
# sequence-parallel runs are Llama with the head replicated and Qwen2's tied head).
train tp2_sp 2 --batch 2 --tp 2 --sp 1 --stage 2 &&
  check "--tp 2 --sp 1 = default within 1e-4" $CMP "$(st base)" "$(st tp2_sp)" close . 1e-4
# The embedding and head replicated without sequence parallelism (as with a vocabulary tp does
# not divide).
train tp2_rep 2 --batch 2 --tp 2 --vocab-parallel 0 --stage 1 &&
  check "--tp 2 --vocab-parallel 0 = default within 1e-4" $CMP "$(st base)" "$(st tp2_rep)" close . 1e-4
# whole_tp2 NAME OPT CATEGORY BYHAND SLACK: --optimizer OPT on 1 rank (NAME) and at --tp 2 on 2
# ranks, stage 3 (NAME_tp2): every weight within 1e-4 of the 1-rank run's, the tp run's ledger
# peak of CATEGORY (rank 0) equal to BYHAND, and zshard-plan's per-rank figure for it in
# [BYHAND, BYHAND + SLACK].
whole_tp2() {
  local name=$1 opt=$2 cat=$3 want=$4 slack=$5
  train "$name" 1 --batch 2 --optimizer "$opt" &&
    train "${name}_tp2" 2 --batch 2 --tp 2 --stage 3 --optimizer "$opt" \
      --metrics "$W/${name}_tp2.jsonl" || return 0
  check "--optimizer $opt --tp 2 = 1 rank within 1e-4" $CMP "$(st "$name")" "$(st "${name}_tp2")" \
    close . 1e-4
  local got planned
  got=$(grep '"event":"memory","when":"end"' "$W/${name}_tp2.jsonl" | head -n1 |
    python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["bytes"]["'"$cat"'"][1])')
  check "--optimizer $opt --tp 2: $cat peak $got = $want by hand" test "$got" = "$want"
  planned=$("$PLAN" --model "$(st "$name" | xargs dirname)/config.json" --world 2 --tp 2 \
    --stage 3 --device cpu --dtype fp32 --seq 32 --batch 2 --optimizer "$opt" --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["per_rank"]["'"$cat"'"])')
  check "zshard-plan --tp 2 --optimizer $opt: $cat $planned within $slack bytes above $want" \
    test "$planned" -ge "$want" -a "$planned" -le $((want + slack))
}
# --optimizer muon (the examples' grouping) at --tp 2: each Muon matrix's whole step joins its
# slices over the tp group, so the weights are the 1-rank Muon run's up to the order of fp32 sums
# (measured 5.7e-6, the head's; 1.4e-2 with Newton-Schulz run on each slice). Its buffer
# peak, by hand (stage 3 on 2 ranks: 1 data-parallel rank, which computes every whole step): a
# layer's 18560 elements on a tp rank (q 32 x 64, k and v 16 x 64, o 64 x 32, gate, up and down
# 64 x 64, two norms of 64) in one channel, and the largest whole step's scratch, down_proj's: the
# whole 64 x 128 matrix joined (8192 floats) through a receive buffer (8192; dim-1 slices), and
# Newton-Schulz's 2 * 64 * 128 + 2 * 64 * 64 = 24576 floats: 4 * (18560 + 40960) = 238080 bytes.
# zshard-plan --tp 2 --optimizer muon bounds it within the few KiB of its other buffers.
whole_tp2 muon muon buffers 238080 4096
# --optimizer adafactor (every tensor on it) at --tp 2: each slice keeps its share of its whole
# matrix's factors (the whole tensor's first rows + cols elements), so the weights are the 1-rank
# run's up to the order of fp32 sums (measured 1.2e-7; a dim-1 slice's share taken as a row
# block's: 5e-4, watched). Its optimizer bytes on a tp rank, by hand: the fp32 master of its
# slices (214272 bytes) and the kept factors, 4 bytes each: per layer q 64 + 64, k and v 32 + 64,
# gate and up 128 + 64 (split on dim 0: tp rank 0's slice holds them all), o 64 (whole rows of 64
# columns are 2 slice rows of 32), down 128 (a whole row of 128 and the next 64: a slice row and
# a half), two norms 64 each: 1024; the embedding's and the head's 256 + 64 each, the final norm
# 64: 2 * 1024 + 704 = 2752 floats, 225280 bytes in all; zshard-plan plans the same.
whole_tp2 ada adafactor optimizer 225280 0
train params 1 --batch 2 --master params &&
  check "--master params = default, bit for bit" cmp "$(st base)" "$(st params)"
if train budget 1 --batch 2 --offload-budget 1.6M; then
  check "--offload-budget puts 2 of 4 units on the host" \
    grep -q "2 of 4 units on the host" "$W/budget.log"
  check "--offload-budget = default, bit for bit" cmp "$(st base)" "$(st budget)"
  check "the memory table names the budget" grep -q "offload budget 1.60 MiB" "$W/budget.log"
fi
# bf16 moments: m and v rounded to nearest even (relative error <= 2^-9 each), so each AdamW
# update m^/(sqrt(v^)+eps) is off by at most ~2^-9 + 2^-10 < 2^-8 of its size, which is <= lr;
# summed over the steps that is <= 9.9e-3 * 2^-8 = 3.9e-5 per weight. The gradients then drift
# apart with the weights: twice that, 8e-5, bounds it (measured 3.2e-5).
if train bf16m 1 --batch 2 --moment-dtype bf16; then
  check "--moment-dtype bf16: every weight within 8e-5 of fp32 moments" \
    $CMP "$(st base)" "$(st bf16m)" close . 8e-5
  check "--moment-dtype bf16 is not fp32 moments (some weight differs)" \
    bash -c "! cmp -s '$(st base)' '$(st bf16m)'"
  check "the memory table names bf16 moments" grep -q "moments bf16" "$W/bf16m.log"
fi
FROZEN='layers\.0\.|model\.norm|lm_head'
for np in 1 2; do
  train "freeze$np" "$np" --batch $((2 / np)) --freeze 1,head || continue
  check "--freeze 1,head ($np rank(s)): layer 0, norm and head unchanged" \
    $CMP "$(st init)" "$(st freeze$np)" same "$FROZEN"
  check "--freeze 1,head ($np rank(s)): the embedding and layer 1 train" \
    $CMP "$(st init)" "$(st freeze$np)" differ 'embed|layers\.1\.'
done
check "--freeze changes the loss ($(final base) vs $(final freeze1))" \
  test "$(final base)" != "$(final freeze1)"
check "--freeze shrinks grads and optimizer in the memory table" \
  bash -c "grep -A3 'start;' '$W/freeze1.log' | grep -q 'grads  *0.20'"
if "$EXE" $OPT --batch 2 --freeze bogus >"$W/bad.log" 2>&1; then
  echo "FAIL --freeze bogus ran"; fail=$((fail + 1))
else
  check "--freeze bogus is refused with a message" grep -q "'bogus' is not a unit" "$W/bad.log"
fi
if "$EXE" $OPT --batch 2 --freeze 9 >"$W/bad.log" 2>&1; then
  echo "FAIL --freeze 9 (outside the units) ran"; fail=$((fail + 1))
else
  check "--freeze 9 is refused with a message" grep -q "outside the units 0..3" "$W/bad.log"
fi
if "$EXE" $OPT --batch 2 --master nope >"$W/bad.log" 2>&1; then
  echo "FAIL --master nope ran"; fail=$((fail + 1))
else
  check "--master nope is refused with the list" grep -q "master is one of fp32, params" "$W/bad.log"
fi
for tied in 0 1; do
  train "f32_t$tied" 1 --batch 2 --tied $tied && train "b16_t$tied" 1 --batch 2 --tied $tied \
    --dtype bf16 &&
    check "--dtype bf16 (tied $tied): final loss $(final b16_t$tied) within 0.5% of fp32's $(final f32_t$tied)" \
      python3 -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 5e-3 * a)" \
      "$(final f32_t$tied)" "$(final b16_t$tied)"
done
LEAN="--dtype bf16 --master lean --moment-dtype bf16 --deterministic --stage 3"
train lean_np1 1 --batch 1 --micro-steps 2 $LEAN && train lean_np2 2 --batch 1 $LEAN &&
  check "--master lean: 1 rank x 2 micro-steps = 2 ranks x 1, bit for bit" \
    cmp "$(st lean_np1)" "$(st lean_np2)"
# The compact modes on the host tier export the on-device run's bits: lean with the optimizer
# and params offloaded, and with a budget that puts 2 of the 4 units on the host; the remainder
# master with the optimizer offloaded (its remainders, m and v in the arena).
train lean_off 1 --batch 1 --micro-steps 2 $LEAN --offload opt+params &&
  check "--master lean --offload opt+params = on the device, bit for bit" \
    cmp "$(st lean_np1)" "$(st lean_off)"
if train lean_budget 1 --batch 1 --micro-steps 2 $LEAN --offload-budget 1M; then
  check "--master lean --offload-budget 1M puts 2 of 4 units on the host" \
    grep -q "2 of 4 units on the host" "$W/lean_budget.log"
  check "--master lean --offload-budget 1M = on the device, bit for bit" \
    cmp "$(st lean_np1)" "$(st lean_budget)"
fi
REM="--dtype bf16 --master remainder --stage 2"
train rem 1 --batch 2 $REM && train rem_off 1 --batch 2 $REM --offload opt &&
  check "--master remainder --offload opt = on the device, bit for bit" \
    cmp "$(st rem)" "$(st rem_off)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
