#!/usr/bin/env bash
# Bit-exact training across splits and stages: the tiny GPT trained 20 steps with
# --deterministic must end with byte-identical weights (zs_unit_get_param dumps) for
# 1 rank x 4 micro-steps, 4 ranks x 1 micro-step and 2 ranks x 2 micro-steps (micro-step m of
# rank r reads global micro-batch m * ranks + r), at every stage 0..3, and with parameter and
# optimizer offload at stage 3 (11 runs, one answer). EQUIV_ONE_SPLIT=1 (the ASan pass of
# scripts/test.sh, which looks for memory errors, not for other bits) runs 3 of them: 1 rank at
# stage 0, 4 ranks at stage 3, and offloaded.
# usage: test_gpt2_determinism.sh TRAIN_GPT2 [MPIEXEC] [STEPS]
set -u
EXE=$1
MPI=${2:-mpirun}
STEPS=${3:-20}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ARGS="--steps $STEPS --layers 2 --channels 32 --heads 4 --seq 16 --batch 2 --lr 3e-3
      --warmup 2 --deterministic --sample-lines 0 --val-frac 0 --log-every 0"
pass=0
fail=0
ref=
# Runs: stage, ranks, micro-steps, offload. Offload must not change the bits either (DESIGN.md).
RUNS="0:1:4:none 0:4:1:none 0:2:2:none 1:1:4:none 1:4:1:none 2:1:4:none 2:4:1:none 3:1:4:none
      3:4:1:none 3:2:2:none 3:4:1:opt+params"
[ "${EQUIV_ONE_SPLIT:-0}" = 1 ] && RUNS="0:1:4:none 3:4:1:none 3:4:1:opt+params"
for run in $RUNS; do
  IFS=: read -r stage np micro offload <<<"$run"
  set -- "$np" "$micro"
  name=stage${stage}_np$1_micro$2_offload_$offload
  mkdir -p "$W/$name"
  if ! "$MPI" --oversubscribe -np "$1" "$EXE" $ARGS --stage "$stage" --micro-steps "$2" \
    --offload "$offload" --dump-weights "$W/$name" >"$W/$name.log" 2>&1; then
    echo "FAIL $name: train_gpt2 exited non-zero"; tail -5 "$W/$name.log"; fail=$((fail + 1))
    continue
  fi
  n=$(ls "$W/$name" | wc -l)
  if [ "$n" -lt 28 ]; then
    echo "FAIL $name: only $n weight files"; fail=$((fail + 1)); continue
  fi
  if [ -z "$ref" ]; then
    ref=$name
    echo "ok   $name (reference, $n tensors)"; pass=$((pass + 1)); continue
  fi
  diffs=0
  for f in "$W/$ref"/*; do
    cmp -s "$f" "$W/$name/$(basename "$f")" || { diffs=$((diffs + 1)); echo "  differs: $(basename "$f")"; }
  done
  if [ "$diffs" -eq 0 ]; then
    echo "ok   $name: identical to $ref"; pass=$((pass + 1))
  else
    echo "FAIL $name: $diffs of $n tensors differ from $ref"; fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
