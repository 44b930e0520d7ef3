#!/usr/bin/env bash
# Checkpoints across the NVMe tier and world sizes: a host-offload run and a tier run on 2 ranks
# (stage 3) save byte-identical checkpoints; each loads on 1 and on 4 ranks (stage 2) into a tier
# engine and into a host-offload engine (the reference), and what those save again is byte for
# byte the same: the tier took in exactly the state the host-offload engine did, and gave it back.
# Usage: ckpt_nvme_cross.sh MPIEXEC EXE ROOT   (EXE: test_ckpt_nvme; ROOT on a disk, not tmpfs;
# exits 77, skipped, where ROOT cannot hold a tier)
set -euo pipefail
mpiexec=$1 exe=$2 root=$3
tmp=$(mktemp -d "$root/ckpt_nvme_cross.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
run() {
  local np=$1
  shift
  "$mpiexec" --oversubscribe -np "$np" "$exe" "$root" "$@"
}
run 2 save --stage 3 --tier 0 --out "$tmp/h2"
run 2 save --stage 3 --tier 1 --out "$tmp/t2"
diff -r "$tmp/h2" "$tmp/t2"
for w in 1 4; do
  run "$w" reload --stage 2 --tier 0 --in "$tmp/h2" --out "$tmp/h2_host$w"
  run "$w" reload --stage 2 --tier 1 --in "$tmp/h2" --out "$tmp/h2_tier$w"
  run "$w" reload --stage 2 --tier 0 --in "$tmp/t2" --out "$tmp/t2_host$w"
  diff -r "$tmp/h2_host$w" "$tmp/h2_tier$w"
  diff -r "$tmp/h2_host$w" "$tmp/t2_host$w"
done
echo "ckpt_nvme_cross: host and tier checkpoints saved at 2 ranks load into each other at 1 and 4 ranks, byte for byte"
