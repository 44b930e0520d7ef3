#!/usr/bin/env bash
# ckpt_resume.sh with the CUDA device in either half (or both): every test_engine_train process
# is started through tests/with_hostid.sh, so several ranks share the one GPU through NCCL, and
# the CPU processes (MPI, which ignores NCCL_HOSTID) are unchanged. Run it under gpu_expect.sh,
# which skips without a GPU (a CPU half could not load what a skipped CUDA half never saved).
# Usage: ckpt_resume_cuda.sh MPIEXEC EXE G "W1 OPTIONS..." "W2 OPTIONS..." [COMMON OPTIONS...]
set -euo pipefail
mpiexec=$1 exe=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ckpt_resume.sh starts "$exe" as one word: a wrapper puts with_hostid.sh in front.
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$here/../with_hostid.sh" "$exe" >"$tmp/exe"
chmod +x "$tmp/exe"
bash "$here/ckpt_resume.sh" "$mpiexec" "$tmp/exe" "$@"
