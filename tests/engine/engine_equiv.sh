#!/usr/bin/env bash
# Runs the synthetic model on 1 rank x N micro-steps (the reference), then on N ranks x 1
# micro-step, and compares final params: bit-exact in deterministic mode, else to a tolerance.
# Usage: engine_equiv.sh MPIEXEC EXE N STAGE det|nondet [extra test_engine_train args...]
set -euo pipefail
mpiexec=$1 exe=$2 n=$3 stage=$4 mode=$5
shift 5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$mode" = det ]; then det=1 cmp=(--tol 0); else det=0 cmp=(--tol 1e-6); fi
"$mpiexec" --oversubscribe -np 1 "$exe" --stage "$stage" --micro "$n" --det 1 --write "$tmp/ref.bin" "$@"
# EQUIV_RUN_ARGS: options for the N-rank run only (e.g. --offload 3: compare offload vs none).
# shellcheck disable=SC2086
# EQUIV_RUN_PREFIX: a command the N-rank run's program is started through (tests/with_hostid.sh).
"$mpiexec" --oversubscribe -np "$n" ${EQUIV_RUN_PREFIX:-} "$exe" --stage "$stage" --micro 1 --det "$det" \
  --compare "$tmp/ref.bin" "${cmp[@]}" "$@" ${EQUIV_RUN_ARGS:-}
