#!/usr/bin/env bash
# Resume equivalence: 10 steps straight on 1 rank = 5 steps on W1 ranks, save, new processes on
# W2 ranks (another stage, offload, shard group), load, 5 more steps: bit for bit (deterministic
# mode). Every run's global batch is G sequences per step (ranks x micro-steps), so the three
# runs see the same data.
# Usage: ckpt_resume.sh MPIEXEC EXE G "W1 OPTIONS..." "W2 OPTIONS..." [COMMON OPTIONS...]
# CKPT_FIXTURE=DIR: the first half is a checkpoint kept in the repository instead (saved by an
# older zshard with the first half's command: its format must still load, bit for bit).
set -euo pipefail
mpiexec=$1 exe=$2 g=$3 first=$4 second=$5
shift 5
read -r -a a1 <<<"$first"
read -r -a a2 <<<"$second"
w1=${a1[0]} w2=${a2[0]}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$mpiexec" --oversubscribe -np 1 "$exe" --stage 0 --micro "$g" --steps 10 --write "$tmp/straight.bin" "$@"
if [ -n "${CKPT_FIXTURE:-}" ]; then
  cp -r "$CKPT_FIXTURE" "$tmp/ckpt"
else
  "$mpiexec" --oversubscribe -np "$w1" "$exe" --micro $((g / w1)) --steps 5 --save "$tmp/ckpt" "${a1[@]:1}" "$@"
fi
"$mpiexec" --oversubscribe -np "$w2" "$exe" --micro $((g / w2)) --steps 10 --load "$tmp/ckpt" \
  --compare "$tmp/straight.bin" --tol 0 "${a2[@]:1}" "$@"
echo "ckpt_resume: $w1 ranks (${a1[*]:1}) -> $w2 ranks (${a2[*]:1}): bit-identical to the straight run"
