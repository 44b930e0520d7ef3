#!/usr/bin/env bash
# Checkpoints of frozen units: W1 ranks at stage S1 train 3 steps with "embed" and "block"
# frozen (nothing frozen with --trainable among the first's options), save, and dump every value;
# W2 ranks at stage S2 (frozen, or with --trainable among the second's options, nothing frozen)
# load it and must read the same bits, then train a step.
# Usage: frozen_ckpt.sh MPIEXEC EXE "W1 S1 [OPTIONS]" "W2 S2 [OPTIONS]"
set -euo pipefail
mpiexec=$1 exe=$2
read -r -a a1 <<<"$3"
read -r -a a2 <<<"$4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$mpiexec" --oversubscribe -np "${a1[0]}" "$exe" --stage "${a1[1]}" "${a1[@]:2}" \
  --save "$tmp/ckpt" --dump "$tmp/values.bin"
"$mpiexec" --oversubscribe -np "${a2[0]}" "$exe" --stage "${a2[1]}" "${a2[@]:2}" \
  --load "$tmp/ckpt" --compare "$tmp/values.bin"
echo "frozen_ckpt: ${a1[*]} -> ${a2[*]}: the same values"
