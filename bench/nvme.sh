#!/usr/bin/env bash
# The NVMe tier's stream against the disk, in one run on one directory: dd's O_DIRECT sequential
# write and read rates (bs=4M, the same number of bytes as the optimizer state; medians of
# three), then bench/nvme_stream (a WRITE pass to fill the tier, then update passes: read | CPU
# AdamW | write, chunk by chunk). An update pass reads and writes equal bytes, so the disk's rate
# it is compared with is dd's read and write combined, 2 r w / (r + w) (the rate of reading and
# then writing the same bytes). Last line:
#   nvme: stream I/O <GB/s> = <x>% of the disk's O_DIRECT rate (...)
# Run from the build directory: bash ../bench/nvme.sh [--dir DIR (default: a folder under the
#   build directory)] [--gib 1 (>= 4 for the issue's figure)] [--ahead 2] [--chunk-mib 8]
#   [--threads 2] [--reps 3]
# This is the tier's I/O layer alone; the engine's step on the tier comes with its integration.
set -euo pipefail
DIR=""
GIB=1
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
  --dir) DIR=$2; shift ;;
  --gib) GIB=$2; shift ;;
  --ahead | --chunk-mib | --threads | --reps) ARGS+=("$1" "$2"); shift ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
  esac
  shift
done
[ -x bench/nvme_stream ] || { echo "nvme.sh: run from the build directory (bench/nvme_stream)" >&2; exit 2; }
[ -n "$DIR" ] || DIR=$PWD/nvme-bench
mkdir -p "$DIR"
trap 'rm -f "$DIR/dd.bin"' EXIT
count=$(awk -v g="$GIB" 'BEGIN {printf "%d", g * 256}') # 4 MiB blocks
dd_rate() { # dd's "copied, S s, ..." -> GB/s
  awk -v c="$count" '/copied/ {for (i = 1; i <= NF; i++) if ($i == "s,") printf "%.3f", c * 4194304 / $(i - 1) / 1e9}'
}
dd_w() { dd if=/dev/zero of="$DIR/dd.bin" bs=4M count="$count" oflag=direct conv=fsync 2>&1 | dd_rate; }
dd_r() { dd if="$DIR/dd.bin" of=/dev/null bs=4M iflag=direct 2>&1 | dd_rate; }
med3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
w=$(med3 "$(dd_w)" "$(dd_w)" "$(dd_w)")
r=$(med3 "$(dd_r)" "$(dd_r)" "$(dd_r)")
rm -f "$DIR/dd.bin"
rw=$(awk -v r="$r" -v w="$w" 'BEGIN {printf "%.3f", 2 * r * w / (r + w)}')
echo "disk (dd O_DIRECT, bs=4M, $count x 4 MiB, median of 3): write $w GB/s, read $r GB/s," \
  "read+write $rw GB/s  [$DIR on $(df -P "$DIR" | awk 'NR==2 {print $1}')]"
out=$(bench/nvme_stream --dir "$DIR" --gib "$GIB" "${ARGS[@]}")
echo "$out"
last=$(echo "$out" | grep '^nvme_stream: fill')
fill=$(echo "$last" | awk '{for (i = 1; i <= NF; i++) if ($i == "fill") print $(i + 1)}')
upd=$(echo "$last" | awk '{for (i = 1; i <= NF; i++) if ($i == "I/O") print $(i + 1)}')
pf=$(awk -v a="$fill" -v b="$w" 'BEGIN {printf "%.0f", 100 * a / b}')
pu=$(awk -v a="$upd" -v b="$rw" 'BEGIN {printf "%.0f", 100 * a / b}')
echo "nvme: fill (writes only) $fill GB/s = $pf% of dd's O_DIRECT write"
echo "nvme: stream I/O $upd GB/s = $pu% of the disk's O_DIRECT rate (read+write $rw GB/s; goal >= 70%)"
