#!/usr/bin/env bash
# The GPT-2 example on the CUDA device against the same run on the CPU device: a tiny model
# (2 layers, 64 channels, 4 heads, 32 positions, vocabulary 300 padded to 320) trained 4 steps,
# --deterministic, on NP ranks at one stage. Compared (tests/gpt2/compare_gpt2_runs.py, which
# gives each bound and its reason): the initial weights and data bit for bit; step 0's per-token
# losses, logits and every gradient of each rank's micro-batch; every step's loss and gradient
# norm; the weights and the logits after training. The CPU run is fp32 (the CPU kernels are fp32
# only); the CUDA run is DTYPE (fp32: tight bounds, bf16: bf16's). Several ranks share the one GPU
# through NCCL, each rank with its own NCCL_HOSTID (tests/with_hostid.sh); the CUDA run's banner
# must say "comm nccl", so the test cannot pass on another backend.
#
# usage: test_gpt2_cuda.sh TRAIN_GPT2_DUMP SOURCE_DIR MPIEXEC CUDA_PROBE NP STAGE fp32|bf16
#        test_gpt2_cuda.sh TRAIN_GPT2_DUMP SOURCE_DIR MPIEXEC - NP STAGE --self-test
# --self-test needs no GPU: both runs on the CPU device must pass every check with no difference
# at all, compare_gpt2_runs.py --self-test plants differences (each check must pass 0.5x its
# bound and fail 2x), and a CPU run with a 1.5x learning rate must fail the comparison.
# Without a CUDA device (CUDA_PROBE exits 77) it prints "SKIP: no CUDA device" and exits 0.
set -u
EXE=$1
SRC=$2
MPI=$3
PROBE=$4
NP=$5
STAGE=$6
MODE=$7
PY=${PYTHON:-python3}
CMP=$SRC/tests/gpt2/compare_gpt2_runs.py
HOSTID=$SRC/tests/with_hostid.sh
. "$SRC/tests/fixtures.sh"
[ "$MODE" != --self-test ] && zs_need_gpu "$PROBE"
zs_workdir
TINY=(--layers 2 --channels 64 --heads 4 --seq 32 --batch 2 --vocab 300 --steps 4 --lr 1e-3
  --lr-min-frac 1 --warmup 0 --val-frac 0 --sample-lines 0 --log-every 0 --deterministic
  --stage "$STAGE")

# run NAME DEVICE DTYPE [EXTRA...]: train_gpt2_dump on NP ranks into $W/NAME.
run() {
  local name=$1 device=$2 dtype=$3
  shift 3
  local d=$W/$name prefix=()
  mkdir -p "$d/g" "$d/w"
  [ "$device" = cuda ] && prefix=("$HOSTID")
  if ! "$MPI" --oversubscribe -np "$NP" "${prefix[@]}" "$EXE" "${TINY[@]}" --device "$device" \
    --dtype "$dtype" --metrics "$d/m.jsonl" --dump-grads "$d/g" --dump-weights "$d/w" \
    --dump-logits "$d/logits.bin" "$@" >"$d.log" 2>&1; then
    echo "FAIL $name: train_gpt2_dump exited non-zero"
    tail -15 "$d.log"
    return 1
  fi
  grep -m1 "^train_gpt2 |" "$d.log" | cut -c1-160
}

if [ "$MODE" = --self-test ]; then
  fail=0
  run cpu cpu fp32 || exit 1
  run cpu2 cpu fp32 || exit 1
  echo "== two CPU runs, fp32 bounds (no difference at all is expected)"
  "$PY" "$CMP" --profile fp32 --ranks "$NP" "$W/cpu" "$W/cpu2" || fail=1
  n=0
  for f in "$W"/cpu/g/* "$W"/cpu/w/* "$W/cpu/logits.bin"; do # every dump file, bit for bit
    n=$((n + 1))
    cmp -s "$f" "$W/cpu2/${f#"$W"/cpu/}" || { echo "FAIL two CPU runs differ in $f"; fail=1; }
  done
  echo "the two CPU runs' $n dump files are bit-identical: $([ $fail = 0 ] && echo yes || echo NO)"
  echo "== planted differences"
  "$PY" "$CMP" --self-test "$W/cpu" || fail=1
  echo "== a CPU run with lr x1.5 must fail the fp32 comparison"
  run lr cpu fp32 --lr 1.5e-3 || exit 1
  if "$PY" "$CMP" --profile fp32 --ranks "$NP" "$W/cpu" "$W/lr" >"$W/lr.cmp" 2>&1; then
    echo "FAIL the lr x1.5 run passed the comparison"
    cat "$W/lr.cmp"
    fail=1
  else
    echo "ok   the lr x1.5 run fails the comparison; its failed checks:"
    grep '^FAIL' "$W/lr.cmp" | sed 's/^/       /'
  fi
  echo "test_gpt2_cuda self-test: $([ $fail = 0 ] && echo OK || echo FAILED)"
  exit $fail
fi

case $MODE in fp32 | bf16) ;; *) echo "FAIL: dtype '$MODE' is not fp32 or bf16"; exit 2 ;; esac
run cpu cpu fp32 || exit 1
run cuda cuda "$MODE" || exit 1
if ! grep -q "^train_gpt2 | .*cuda:[0-9]*, comm nccl, world $NP," "$W/cuda.log"; then
  echo "FAIL the CUDA run's banner does not say cuda + comm nccl + world $NP:"
  grep -m1 "^train_gpt2 |" "$W/cuda.log"
  exit 1
fi
"$PY" "$CMP" --profile "$MODE" --ranks "$NP" "$W/cpu" "$W/cuda"
