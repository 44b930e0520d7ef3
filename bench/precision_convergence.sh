#!/usr/bin/env bash
# Convergence per optimizer-state mode: the GPT-2 demo's schedule (scripts/demo-gpt2.sh: 4
# layers, C = 128, 4 heads, T = 64, batch 8, 4 ranks at stage 3, lr 2e-3, warmup 25, 250 steps,
# 8 eval batches) once per mode, with --deterministic (so two modes that promise the same bits
# show the same curve, and nothing else moves the curves) and an evaluation every --eval-every
# steps; then bench/precision_convergence.py writes the validation-loss curves as CSV and SVG and
# prints each mode's final validation loss relative to fp32 states (goal: within 1%).
#
#   bench/precision_convergence.sh [--steps 250] [--np 4] [--eval-every 25] [--modes a,b,...]
#                                  [--example gpt2|llama]
#
# Modes (name | train_gpt2 flags): the table MODES below, one line each (the last ones are other
# optimizers: muon, the hidden matrices on Muon at --muon-lr 0.02 beside AdamW; adafactor, every
# tensor on Adafactor, --lr its relative step's cap); a mode whose flags
# train_gpt2 refuses ("--master is one of ...") prints "not built" and is left out. The first
# mode is the reference. bf16_params (bf16 params, fp32 master and moments; on the CPU device the
# kernels compute in fp32 on widened units) is lean's fair baseline: the same bf16 forward and
# backward, only the master differs. Output in $OUT_DIR (default $BUILD_DIR/precision-convergence):
# <mode>.jsonl, <mode>.log, convergence.csv, convergence.svg. Last line:
#   convergence: worst |final val loss - fp32_states| = <x>% (goal <= 1%) over <k> modes
# Environment: BUILD_DIR (default build; train_gpt2 must be built), MPIEXEC.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

MODES=(
  "fp32_states|"
  "master_params|--master params"
  "bf16_moments|--moment-dtype bf16"
  "params_bf16|--master params --moment-dtype bf16"
  "remainder|--dtype bf16 --master remainder --moment-dtype bf16"
  "bf16_params|--dtype bf16"
  "lean|--dtype bf16 --master lean --moment-dtype bf16"
  "muon|--optimizer muon"
  "adafactor|--optimizer adafactor --lr 1e-2"
)

steps=250
np=4
eval_every=25
only=""
example=gpt2
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift ;;
    --np) np=$2; shift ;;
    --eval-every) eval_every=$2; shift ;;
    --modes) only=",$2,"; shift ;;
    --example) example=$2; shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "precision_convergence: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
build=${BUILD_DIR:-$root/build}
exe=$build/examples/train_$example
[ -x "$exe" ] || { echo "precision_convergence: $exe is not built" >&2; exit 2; }
out=${OUT_DIR:-$build/precision-convergence}
mkdir -p "$out"
mpiexec=${MPIEXEC:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1

# The demo's schedule (scripts/demo-gpt2.sh), --deterministic, evaluation every $eval_every.
warmup=$((steps / 10))
# --example llama: train_llama's default shape (4 layers, C = 128, 4 heads, 2 KV heads) instead.
model=(--layers 4 --channels 128 --heads 4)
[ "$example" = llama ] && model=(--layers 4 --hidden 128 --heads 4 --kv-heads 2)
args=(--stage 3 "${model[@]}" --seq 64 --batch 8 --micro-steps 1
  --steps "$steps" --lr 2e-3 --warmup "$warmup" --eval-every "$eval_every" --eval-batches 8
  --log-every 50 --sample-lines 0 --deterministic)
echo "== precision convergence: $np ranks, stage 3, $steps steps (warmup $warmup), eval every" \
  "$eval_every, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs"
ran=()
for entry in "${MODES[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  [ -n "$only" ] && case "$only" in *",$name,"*) ;; *) continue ;; esac
  # shellcheck disable=SC2086
  if ! "$exe" $flags --help >"$out/$name.help" 2>&1; then
    echo "convergence: $name not built ($(grep -m1 -o 'error: .*' "$out/$name.help" || true))"
    continue
  fi
  t0=$SECONDS
  rm -f "$out/$name.jsonl"
  # shellcheck disable=SC2086
  if ! "$mpiexec" --oversubscribe -np "$np" "$exe" "${args[@]}" $flags \
    --metrics "$out/$name.jsonl" >"$out/$name.log" 2>&1; then
    echo "convergence: $name FAILED (train_gpt2 exited non-zero; $out/$name.log):"
    tail -3 "$out/$name.log"
    exit 1
  fi
  echo "convergence: $name trained in $((SECONDS - t0)) s ($(grep -m1 -o 'master [a-z0-9]*, moments [a-z0-9]*' "$out/$name.log"))"
  ran+=("$name")
done
[ "${#ran[@]}" -gt 0 ] || { echo "precision_convergence: no mode ran" >&2; exit 1; }
modes=$(IFS=,; echo "${ran[*]}")
python3 "$root/bench/precision_convergence.py" --dir "$out" --modes "$modes" \
  --title "${TITLE:-GPT-2 demo ($np ranks, stage 3, $steps steps): validation loss per mode}"
