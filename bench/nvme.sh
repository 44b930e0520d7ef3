#!/usr/bin/env bash
# The NVMe tier's stream against the disk, in one run on one directory. Baselines (the same number
# of bytes as the optimizer state, medians of three), each an O_DIRECT sequential write, read and
# mixed read+write:
#  - fio (if installed; `apt-get install fio`), ioengine io_uring, --direct=1, at the stream's
#    block size (--chunk-mib) and its I/Os in flight: 3 arrays x ahead chunks each side, so
#    iodepth 3 (2 ahead + 1) for writes (a WRITE pass keeps every slot's write in flight),
#    3 ahead for reads, 6 ahead for the mixed --rw=rw (half reads, half writes);
#  - dd at the same depths: that many dd processes, each on its own part of one file;
#  - dd at queue depth 1 (bs=4M; printed for reference: it is no upper bound).
# Then bench/nvme_stream (a WRITE pass to fill the tier, then update passes: read | CPU AdamW |
# write, chunk by chunk). An update pass reads and writes equal bytes, so it is compared with the
# mixed baseline (fio's rw; for dd, read and write combined, 2 r w / (r + w)). The percentages are
# against the best parallel baseline. On a virtual disk (virtio) the host's page cache may serve
# the guest's O_DIRECT I/O, so every figure can exceed the physical disk's. Last line:
#   nvme: stream I/O <GB/s> = <x>% of the best parallel O_DIRECT baseline (...)
# Then the engine's step (bench/nvme_engine, one rank of the CPU device, stage 1, fp32 params,
# AdamW with fp32 master, m and v): a model of --gib GiB of optimizer state with all of it on the
# tier (offload_host_bytes just above the tier's staging), beside the same step with the state in
# host memory (host offload), and the check that both leave bit-identical params. Its I/O rate is
# the bytes a step reads and writes (2 x the state) over the step time, against the best parallel
# read+write baseline. Last line:
#   nvme: step I/O <GB/s> = <x>% of the disk's O_DIRECT rate; step <t> s vs host offload <t> s
# Then, before that last line, the capacity demonstration (bench/nvme_capacity.sh, in DIR/capacity;
# see its header): train_gpt2 on 2 ranks at stage 3 under a per-rank cap (RLIMIT_AS) below half the
# model's optimizer state with the state on the tier, against an uncapped host-offload run: the
# final weights equal bit for bit and the logged losses (6 decimals) equal. Its line (4-5 min):
#   nvme: capacity: <P> params (<S> GiB optimizer state) trained under <cap> per rank with the
#   tier; losses equal to host offload bit for bit: yes|NO (...)
# Run from the build directory: bash ../bench/nvme.sh [--dir DIR (default: a folder under the
#   build directory)] [--gib 1 (>= 4 for the issue's figure)] [--ahead 2] [--chunk-mib 8]
#   [--threads 2] [--reps 3] [--no-engine (the I/O layer only)] [--no-capacity]
set -euo pipefail
DIR=""
GIB=1
AHEAD=2
CHUNK_MIB=8
ARGS=()
ENGINE=1
CAPACITY=1
while [ $# -gt 0 ]; do
  case "$1" in
  --dir) DIR=$2; shift ;;
  --gib) GIB=$2; shift ;;
  --ahead) AHEAD=$2; ARGS+=("$1" "$2"); shift ;;
  --chunk-mib) CHUNK_MIB=$2; ARGS+=("$1" "$2"); shift ;;
  --threads | --reps) ARGS+=("$1" "$2"); shift ;;
  --no-engine) ENGINE=0; shift; continue ;;
  --no-capacity) CAPACITY=0; shift; continue ;;
  *) sed -n '2,32p' "$0"; exit 2 ;;
  esac
  shift
done
[ -x bench/nvme_stream ] || { echo "nvme.sh: run from the build directory (bench/nvme_stream)" >&2; exit 2; }
[ -n "$DIR" ] || DIR=$PWD/nvme-bench
mkdir -p "$DIR"
F=$DIR/baseline.bin
trap 'rm -f "$F"' EXIT
bytes=$(awk -v g="$GIB" 'BEGIN {printf "%.0f", g * 1073741824}') # %d overflows in mawk
dw=$((3 * (2 * AHEAD + 1))) dr=$((3 * AHEAD)) drw=$((6 * AHEAD)) # the stream's I/Os in flight
med3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
best() { printf '%s\n' "$@" | grep -v '^-$' | sort -g | tail -1; }
now() { date +%s.%N; }
rate() { awk -v b="$1" -v t0="$2" -v t1="$3" 'BEGIN {printf "%.3f", b / (t1 - t0) / 1e9}'; }

# dd at queue depth 1 (bs=4M).
count=$((bytes / 4194304))
dd_rate() { # dd's "copied, S s, ..." -> GB/s
  awk -v c="$count" '/copied/ {for (i = 1; i <= NF; i++) if ($i == "s,") printf "%.3f", c * 4194304 / $(i - 1) / 1e9}'
}
dd_w() { dd if=/dev/zero of="$F" bs=4M count="$count" oflag=direct conv=fsync 2>&1 | dd_rate; }
dd_r() { dd if="$F" of=/dev/null bs=4M iflag=direct 2>&1 | dd_rate; }
w1=$(med3 "$(dd_w)" "$(dd_w)" "$(dd_w)")
r1=$(med3 "$(dd_r)" "$(dd_r)" "$(dd_r)")
rw1=$(awk -v r="$r1" -v w="$w1" 'BEGIN {printf "%.3f", 2 * r * w / (r + w)}')

# dd at the stream's depth: n processes at the stream's block size, process i on part i of F.
ddn() { # ddn write|read n -> GB/s of all n together
  local mode=$1 n=$2 bs=$((CHUNK_MIB * 1048576)) t0 t1 i
  local per=$((bytes / bs / n))
  t0=$(now)
  for ((i = 0; i < n; i++)); do
    if [ "$mode" = write ]; then
      dd if=/dev/zero of="$F" bs="$bs" count="$per" seek=$((i * per)) oflag=direct conv=notrunc,fsync 2>/dev/null &
    else
      dd if="$F" of=/dev/null bs="$bs" count="$per" skip=$((i * per)) iflag=direct 2>/dev/null &
    fi
  done
  wait
  t1=$(now)
  rate $((per * n * bs)) "$t0" "$t1"
}
wp=$(med3 "$(ddn write $dw)" "$(ddn write $dw)" "$(ddn write $dw)")
rp=$(med3 "$(ddn read $dr)" "$(ddn read $dr)" "$(ddn read $dr)")
rwp=$(awk -v r="$rp" -v w="$wp" 'BEGIN {printf "%.3f", 2 * r * w / (r + w)}')

# fio at the stream's depth, if installed: its read + write bandwidth.
wf=- rf=- rwf=-
if command -v fio >/dev/null; then
  fio1() { # fio1 write|read|rw depth -> GB/s (read + write bytes / s)
    fio --name=nvme-baseline --filename="$F" --size="$bytes" --bs="${CHUNK_MIB}M" --rw="$1" \
      --rwmixread=50 --iodepth="$2" --ioengine=io_uring --direct=1 --end_fsync=1 \
      --output-format=json 2>/dev/null |
      python3 -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]
print("%.3f" % ((j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 1e9))'
  }
  wf=$(med3 "$(fio1 write $dw)" "$(fio1 write $dw)" "$(fio1 write $dw)")
  rf=$(med3 "$(fio1 read $dr)" "$(fio1 read $dr)" "$(fio1 read $dr)")
  rwf=$(med3 "$(fio1 rw $drw)" "$(fio1 rw $drw)" "$(fio1 rw $drw)")
else
  echo "nvme.sh: fio not installed (apt-get install fio): parallel dd only" >&2
fi
rm -f "$F"
dev=$(df -P "$DIR" | awk 'NR==2 {print $1}')
echo "disk: $DIR on $dev, $bytes bytes per baseline, medians of 3, O_DIRECT; on a virtio disk the" \
  "host's page cache may serve O_DIRECT I/O (rates above the physical disk's)"
printf '  %-40s write %s GB/s, read %s GB/s, read+write %s GB/s (reference only)\n' "dd qd1 (bs=4M):" "$w1" "$r1" "$rw1"
printf '  %-40s write %s GB/s, read %s GB/s, read+write %s GB/s (2rw/(r+w))\n' \
  "dd x$dw/x$dr processes (bs=${CHUNK_MIB}M):" "$wp" "$rp" "$rwp"
if [ "$wf" = - ]; then
  echo "  fio: not installed (apt-get install fio)"
else
  printf '  %-40s write %s GB/s, read %s GB/s, read+write (rw 50/50) %s GB/s\n' \
    "fio io_uring qd $dw/$dr/$drw (bs=${CHUNK_MIB}M):" "$wf" "$rf" "$rwf"
fi
wb=$(best "$wp" "$wf")
rwb=$(best "$rwp" "$rwf")
out=$(bench/nvme_stream --dir "$DIR" --gib "$GIB" "${ARGS[@]}")
echo "$out"
last=$(echo "$out" | grep '^nvme_stream: fill')
fill=$(echo "$last" | awk '{for (i = 1; i <= NF; i++) if ($i == "fill") print $(i + 1)}')
upd=$(echo "$last" | awk '{for (i = 1; i <= NF; i++) if ($i == "I/O") print $(i + 1)}')
pf=$(awk -v a="$fill" -v b="$wb" 'BEGIN {printf "%.0f", 100 * a / b}')
pu=$(awk -v a="$upd" -v b="$rwb" 'BEGIN {printf "%.0f", 100 * a / b}')
pu1=$(awk -v a="$upd" -v b="$rw1" 'BEGIN {printf "%.0f", 100 * a / b}')
echo "nvme: fill (writes only) $fill GB/s = $pf% of the best parallel O_DIRECT write ($wb GB/s)"
echo "nvme: stream I/O $upd GB/s = $pu% of the best parallel O_DIRECT baseline (read+write $rwb GB/s;" \
  "goal >= 70%; $pu1% of dd at qd1; virtio: the host cache applies)"

[ "$ENGINE" = 1 ] || exit 0
# The engine's step: 16 Mi params per unit (192 MiB of state each), enough units for --gib GiB.
[ -x bench/nvme_engine ] || { echo "nvme.sh: bench/nvme_engine not built" >&2; exit 2; }
per=16777216
units=$(awk -v g="$GIB" -v p="$per" 'BEGIN {u = int(g * 1073741824 / (12 * p) + 0.999); print (u < 1 ? 1 : u)}')
chunk=$((4 << 20)) # offload_chunk's default: the tier's staging is 36 x chunk bytes
hostb=$((36 * chunk + (16 << 20))) # the staging plus room for the arena's own reserve: no unit fits
mkdir -p "$DIR/engine"
eng=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ${MPIEXEC:-mpirun} -np 1 \
  bench/nvme_engine --dir "$DIR/engine" --units "$units" --per-unit "$per" --host-bytes "$hostb")
echo "$eng"
last=$(echo "$eng" | grep '^nvme_engine: tier step')
ts=$(echo "$last" | awk '{print $4}')
io=$(echo "$last" | awk '{gsub(/\(/, "", $6); print $6}')
th=$(echo "$last" | awk '{for (i = 1; i <= NF; i++) if ($i == "offload") print $(i + 2)}')
pe=$(awk -v a="$io" -v b="$rwb" 'BEGIN {printf "%.0f", 100 * a / b}')
# The capacity demonstration prints its lines before the step's line, which stays the last.
capok=1
if [ "$CAPACITY" = 1 ]; then
  bash "$(dirname "$0")/nvme_capacity.sh" --dir "$DIR/capacity" || capok=0
fi
echo "nvme: step I/O $io GB/s = $pe% of the disk's O_DIRECT rate (best parallel read+write $rwb GB/s);" \
  "step $ts s vs host offload $th s"
[ "$capok" = 1 ]
