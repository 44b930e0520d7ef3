#!/usr/bin/env bash
# Bit-exact training across splits and stages: the tiny GPT trained 20 steps with
# --deterministic must end with byte-identical weights (zs_unit_get_param dumps) for
# 1 rank x 4 micro-steps and 4 ranks x 1 micro-step, at every stage 0..3 (8 runs, one answer).
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
for stage in 0 1 2 3; do
  for split in "1 4" "4 1"; do
    set -- $split
    name=stage${stage}_np$1_micro$2
    mkdir -p "$W/$name"
    if ! "$MPI" --oversubscribe -np "$1" "$EXE" $ARGS --stage "$stage" --micro-steps "$2" \
      --dump-weights "$W/$name" >"$W/$name.log" 2>&1; then
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
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
