#!/usr/bin/env bash
# Tensor parallelism against data parallelism (test_engine_tp.c), 4 ranks, 20 steps of 4
# micro-batches: tp 1 x dp 4 is the reference; tp 2 x dp 2 and tp 4 x dp 1 must give its weights,
# losses and gradient norms, its whole optimizer state after the last step and whole gradients of
# the last step (zs_unit_get_state_whole, zs_unit_get_grad_whole) to 1e-5 of their magnitude.
# The bound: the runs differ only in the order of fp32 sums (a row-parallel product summed over
# tp slices, the f conjugate's all-reduce, the partial gradients' sum), each off by a few ulps
# (~1e-7 relative) per step, which Adam's normalised updates carry at most lr-sized into the
# weights; measured 8.2e-8 over 20 steps (docs/PARALLEL.md).
# At a fixed tp the deterministic runs are bit-identical across data-parallel splits.
# EQUIV_ONE_SPLIT=1 (the ASan pass of scripts/test.sh) leaves out the runs marked `full`: their
# code paths are those of the other runs with other counts.
# Usage: tp_equiv.sh MPIEXEC TEST_ENGINE_TP
set -euo pipefail
mpiexec=$1 exe=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # NP ARGS...
  local np=$1
  shift
  echo "tp_equiv.sh: np $np $*"
  "$mpiexec" --oversubscribe -np "$np" "$exe" "$@"
}
full() { [ "${EQUIV_ONE_SPLIT:-0}" = 1 ] || run "$@"; }
run 4 --tp 1 --stage 3 --write "$tmp/ref.bin" --save "$tmp/ck0" --save-at 3
# The reference's own checkpoint (format version 2, no layouts) resumed at tp 2, offloaded.
run 4 --tp 2 --micro 2 --stage 1 --offload 1 --load "$tmp/ck0" --compare "$tmp/ref.bin"
# Saved after step 3 at tp 2 (units with no split tensor from tp rank 0 only): loaded at tp 1 (dp
# 4), tp 4 (dp 1) and tp 2 (dp 1, offloaded), each
# rank's slices the saved tensors' bit for bit, and trained on to the reference's weights. The
# safetensors exports of the same tensors at tp 2, 1 and 4 are the same bytes.
run 4 --tp 2 --micro 2 --stage 3 --compare "$tmp/ref.bin" --save "$tmp/ck2" --save-at 3 \
  --export "$tmp/x2.safetensors"
# A unit with no split tensor (scale) is written by tp rank 0 only: tp rank 1's files are smaller.
ck=$(ls -d "$tmp"/ck2/ckpt-* | tail -n1)
for r in 0 2; do
  s0=$(stat -c %s "$ck/rank-0000$r.zsd") s1=$(stat -c %s "$ck/rank-0000$((r + 1)).zsd")
  [ "$s1" -lt "$s0" ] || { echo "FAIL: rank $((r + 1))'s file ($s1 bytes) not below rank $r's ($s0)"; exit 1; }
done
run 4 --tp 1 --stage 2 --load "$tmp/ck2" --compare "$tmp/ref.bin" --export "$tmp/x1.safetensors"
run 4 --tp 4 --micro 4 --stage 0 --load "$tmp/ck2" --compare "$tmp/ref.bin" \
  --export "$tmp/x4.safetensors"
cmp "$tmp/x1.safetensors" "$tmp/x2.safetensors"
cmp "$tmp/x1.safetensors" "$tmp/x4.safetensors"
run 2 --tp 2 --micro 4 --stage 3 --offload 1 --load "$tmp/ck2" --compare "$tmp/ref.bin"
# At 3 data-parallel ranks (tp 1): the saved tensors bit for bit (the batches then differ).
run 3 --tp 1 --stage 3 --load "$tmp/ck2"
full 4 --tp 4 --micro 4 --stage 0 --whole 1 --compare "$tmp/ref.bin"
full 4 --tp 2 --micro 2 --stage 3 --offload 1 --det 0 --compare "$tmp/ref.bin"
run 4 --tp 2 --micro 2 --stage 2 --det 0 --whole 2 --compare "$tmp/ref.bin"
run 4 --tp 2 --micro 2 --stage 3 --group 1 --compare "$tmp/ref.bin" # hybrid: replica groups of 2
# zs_engine_broadcast_params restores scrambled slices from each dp root and replicated tensors
# from tp rank 0 (also at dp 1).
run 4 --tp 2 --micro 2 --stage 2 --broadcast 1 --compare "$tmp/ref.bin"
full 4 --tp 4 --micro 4 --stage 0 --broadcast 1 --compare "$tmp/ref.bin"
run 2 --tp 2 --stage 3 --broadcast 1 --steps 1 # sharded params at dp 1: refused
# SGD (momentum 0.9), whose step scales with the clip coefficient: the norm must be the whole's.
full 4 --tp 1 --sgd 1 --stage 2 --write "$tmp/sgd.bin"
full 4 --tp 2 --micro 2 --sgd 1 --stage 2 --compare "$tmp/sgd.bin"
# Muon on the split matrices (W1 on dim 0, W2 on dim 1): each whole step joins the slices over the
# tp group, so every tp size trains the tp 1 run's Muon (measured 1.4e-7; computed on the slice,
# 7e-2 off). Its checkpoint at tp 2 resumes at tp 1 and 4; the NVMe tier streams its state (the
# test checks that the tier holds a unit: chunks of 64 elements make its staging small enough for
# this model, and a host cap of 10496 bytes leaves the state no room on the host).
# Adafactor on W1, b1 and W2 alike: each slice keeps its share of the whole matrix's factors, so
# its whole state too is the tp 1 run's (measured 1.5e-7; a dim-1 slice's share taken as a row
# block's, 2.4e-2 off).
# At sharded state only the owner's tp group joins a split tensor (and hands back the results of
# the one rank of it that computes them): on top of an AdamW run of the same shape the tp traffic
# is one join and one reduce-scatter per tensor and step.
nvme() { ZS_NVME_PATH="$tmp/nvme" ZS_OFFLOAD_CHUNK=64 ZS_OFFLOAD_HOST_BYTES=10496 "$@"; }
run 4 --tp 2 --micro 2 --stage 3 --steps 3 --bytes-out "$tmp/adamw.bytes"
# The export joins each split tensor once, on rank 0's tp group (on every tp group: 1.3x here).
run 4 --tp 2 --micro 2 --stage 3 --steps 3 --save "$tmp/ckb" --save-at 2 \
  --export "$tmp/xb.safetensors" --bytes-base "$tmp/adamw.bytes"
mkdir "$tmp/nvme"
for opt in muon ada; do
  run 4 --tp 1 --stage 3 --$opt 1 --write "$tmp/$opt.bin"
  run 4 --tp 2 --micro 2 --stage 3 --$opt 1 --compare "$tmp/$opt.bin" --save "$tmp/ck$opt" --save-at 3
  run 4 --tp 4 --micro 4 --stage 0 --$opt 1 --compare "$tmp/$opt.bin"
  run 4 --tp 1 --stage 1 --$opt 1 --load "$tmp/ck$opt" --compare "$tmp/$opt.bin"
  full 4 --tp 4 --micro 4 --stage 2 --$opt 1 --load "$tmp/ck$opt" --compare "$tmp/$opt.bin"
  nvme full 4 --tp 2 --micro 2 --stage 3 --offload 1 --group 1 --$opt 1 --compare "$tmp/$opt.bin"
  run 4 --tp 2 --micro 2 --stage 3 --steps 3 --$opt 1 --bytes-base "$tmp/adamw.bytes"
done
# Deterministic bits at tp 2: 2 data-parallel ranks x 2 micro-steps = 1 x 4.
run 2 --tp 2 --micro 4 --stage 3 --write "$tmp/tp2.bin" --save "$tmp/ck1" --save-at 2
full 4 --tp 2 --micro 2 --stage 1 --compare "$tmp/tp2.bin" --tol 0
# Resumed at the same tp size on another data-parallel split and stage: the same bits. Saved at
# tp 4 and loaded at tp 2: the tensors bit for bit.
run 4 --tp 2 --micro 2 --stage 2 --load "$tmp/ck1" --compare "$tmp/tp2.bin" --tol 0
ZS_CKPT_ASYNC=1 run 4 --tp 4 --micro 4 --stage 3 --save "$tmp/ck4" --save-at 1 --steps 2 # async
run 2 --tp 2 --micro 4 --stage 0 --load "$tmp/ck4" --steps 2
run 4 --bad 1
