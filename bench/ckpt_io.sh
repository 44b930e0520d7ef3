#!/usr/bin/env bash
# Checkpoint save and load of a GPT-2 d12-sized model (124M params, 1.49 GB of optimizer state)
# on 1 and 4 ranks, beside the disk's own sequential rate measured in the same run with dd (write:
# 1.5 GB with fsync; read: the same file after dropping it from the page cache, as ckpt_io drops
# its checkpoint's files before each load; medians of three). Prints a table, the ratios, and
# writes CSV.
# Run from the build directory: bash ../bench/ckpt_io.sh [--dir DIR (default: under /tmp)]
#   [--reps 3] [--csv ckpt_io.csv]
set -euo pipefail
DIR=""
REPS=3
CSV=ckpt_io.csv
while [ $# -gt 0 ]; do
  case "$1" in
  --dir) DIR=$2; shift ;;
  --reps) REPS=$2; shift ;;
  --csv) CSV=$2; shift ;;
  *) sed -n '2,7p' "$0"; exit 2 ;;
  esac
  shift
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
[ -n "$DIR" ] || DIR=$(mktemp -d /tmp/zs_ckpt_io.XXXXXX)
mkdir -p "$DIR"
trap 'rm -rf "$DIR/dd.bin" "$DIR"/ck1 "$DIR"/ck4' EXIT
# The disk: dd with fsync (write), then the file read back cold (nocache drops it first); the
# median of three of each (this disk's rate varies from run to run).
mb=1490
dd_w() { dd if=/dev/zero of="$DIR/dd.bin" bs=1M count=$mb conv=fsync 2>&1 | awk '/copied/ {print $(NF-3)}'; }
dd_r() {
  dd if="$DIR/dd.bin" iflag=nocache count=0 status=none
  dd if="$DIR/dd.bin" of=/dev/null bs=1M 2>&1 | awk '/copied/ {print $(NF-3)}'
}
med3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
wsec=$(med3 "$(dd_w)" "$(dd_w)" "$(dd_w)")
rsec=$(med3 "$(dd_r)" "$(dd_r)" "$(dd_r)")
dd_w=$(awk -v s="$wsec" -v m=$mb 'BEGIN {printf "%.3f", m * 1048576 / s / 1e9}')
dd_r=$(awk -v s="$rsec" -v m=$mb 'BEGIN {printf "%.3f", m * 1048576 / s / 1e9}')
echo "disk (dd, $mb MiB): write+fsync $dd_w GB/s, cold read $dd_r GB/s  [$(df -h "$DIR" | awk 'NR==2 {print $1}')]"
echo "ranks,save_s,save_gbs,save_vs_dd,load_s,load_gbs,load_vs_dd,dd_write_gbs,dd_read_gbs" >"$CSV"
printf "%-6s %9s %9s %9s %9s %9s %9s\n" ranks save_s save_GB/s vs_dd load_s load_GB/s vs_dd
for n in 1 4; do
  line=$(mpirun --oversubscribe -np $n bench/ckpt_io --dir "$DIR/ck$n" --reps "$REPS" | grep '^ckpt_io:')
  ss=$(echo "$line" | awk '{for (i = 1; i <= NF; i++) if ($i == "save") print $(i + 1)}')
  sg=$(echo "$line" | awk '{for (i = 1; i <= NF; i++) if ($i == "save") print $(i + 3)}')
  ls=$(echo "$line" | awk '{for (i = 1; i <= NF; i++) if ($i == "load") print $(i + 1)}')
  lg=$(echo "$line" | awk '{for (i = 1; i <= NF; i++) if ($i == "load") print $(i + 3)}')
  sr=$(awk -v a="$sg" -v b="$dd_w" 'BEGIN {printf "%.2f", a / b}')
  lr=$(awk -v a="$lg" -v b="$dd_r" 'BEGIN {printf "%.2f", a / b}')
  printf "%-6s %9s %9s %9s %9s %9s %9s\n" "$n" "$ss" "$sg" "$sr" "$ls" "$lg" "$lr"
  echo "$n,$ss,$sg,$sr,$ls,$lg,$lr,$dd_w,$dd_r" >>"$CSV"
done
echo "ckpt_io: CSV in $CSV (target: save and load >= 0.70 of the disk's own rate)"
