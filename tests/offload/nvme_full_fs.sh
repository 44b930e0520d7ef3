#!/usr/bin/env bash
# A small disk of its own for the NVMe tier: a 24 MiB ext4 image loop-mounted in a private mount
# namespace (gone with this script, whatever happens), then CMD ARGS... MOUNT_DIR on it (e.g.
# `test_offload_nvme_fail --full-fs`, or mpirun of several ranks sharing it). Exit 77 (skip) where
# this machine cannot: not root, no mkfs.ext4/unshare, no loop device.
# Usage: nvme_full_fs.sh SCRATCH_DIR CMD [ARGS...]
set -uo pipefail
scratch=${1:?usage: nvme_full_fs.sh SCRATCH_DIR CMD [ARGS...]}
shift
[ $# -gt 0 ] || { echo "usage: nvme_full_fs.sh SCRATCH_DIR CMD [ARGS...]" >&2; exit 2; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root: a loop mount needs root"
for t in mkfs.ext4 unshare mount; do command -v "$t" >/dev/null || skip "$t not found"; done
img=$scratch/nvme_full_fs.$$.img
mnt=$scratch/nvme_full_fs.$$.mnt
trap 'rm -rf "$img" "$mnt"' EXIT
{ truncate -s 24M "$img" && mkfs.ext4 -q -F "$img" >/dev/null 2>&1; } || skip "mkfs.ext4 failed"
mkdir -p "$mnt"
# shellcheck disable=SC2016 # expanded by the inner shell
unshare -m --propagation private sh -c '
  img=$1 mnt=$2
  shift 2
  mount -o loop "$img" "$mnt" 2>/dev/null || { echo "SKIP: cannot loop-mount an image here"; exit 77; }
  "$@" "$mnt"' _ "$img" "$mnt" "$@"
