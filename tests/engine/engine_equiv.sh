#!/usr/bin/env bash
# Runs the synthetic model on 1 rank x G micro-steps (the reference), then on each split R x M of
# the same global batch (R ranks x M micro-steps, R * M = G), and compares final params: bit-exact
# in deterministic mode, else to a tolerance. test_engine_train feeds global micro-batch
# m * R + r to micro-step m of rank r, so every split sees the same batches in the same order.
# Usage: engine_equiv.sh MPIEXEC EXE SPLITS STAGE det|nondet [extra test_engine_train args...]
#   SPLITS: N (N ranks x 1 micro-step) or a list like "2x2 4x1 1x4" (one G for all).
# EQUIV_REF_STAGE: the reference's stage (default STAGE: compare across stages too).
# EQUIV_RUN_ARGS: options for the split runs only (e.g. --offload 3: compare offload vs none).
# EQUIV_RUN_PREFIX: a command the split runs' program is started through (tests/with_hostid.sh).
# EQUIV_ONE_SPLIT=1 (the ASan pass of scripts/test.sh): only one split runs, the first with more
#   than one rank and more than one micro-step, else the one with the most ranks. The others take
#   the same code paths with other counts; the normal pass runs them all.
set -euo pipefail
mpiexec=$1 exe=$2 splits=$3 stage=$4 mode=$5
shift 5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$mode" = det ]; then det=1 cmp=(--tol 0); else det=0 cmp=(--tol 1e-6); fi
g=
for s in $splits; do
  case $s in *x*) ;; *) s=${s}x1 ;; esac
  n=$((${s%x*} * ${s#*x}))
  if [ -n "$g" ] && [ "$n" != "$g" ]; then
    echo "engine_equiv.sh: split $s is not $g micro-batches" >&2
    exit 2
  fi
  g=$n
done
if [ "${EQUIV_ONE_SPLIT:-0}" = 1 ]; then
  pick='' most=0
  for s in $splits; do
    case $s in *x*) ;; *) s=${s}x1 ;; esac
    if [ "${s%x*}" -gt 1 ] && [ "${s#*x}" -gt 1 ]; then
      pick=$s
      break
    fi
    if [ "${s%x*}" -gt "$most" ]; then
      most=${s%x*} pick=$s
    fi
  done
  splits=$pick
fi
"$mpiexec" --oversubscribe -np 1 "$exe" --stage "${EQUIV_REF_STAGE:-$stage}" --micro "$g" --det 1 \
  --write "$tmp/ref.bin" "$@"
for s in $splits; do
  case $s in *x*) ;; *) s=${s}x1 ;; esac
  echo "engine_equiv.sh: stage $stage, ${s%x*} ranks x ${s#*x} micro-steps ($mode)"
  # shellcheck disable=SC2086
  "$mpiexec" --oversubscribe -np "${s%x*}" ${EQUIV_RUN_PREFIX:-} "$exe" --stage "$stage" \
    --micro "${s#*x}" --det "$det" --compare "$tmp/ref.bin" "${cmp[@]}" "$@" ${EQUIV_RUN_ARGS:-}
done
