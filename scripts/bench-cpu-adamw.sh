#!/usr/bin/env bash
# CPU AdamW benchmark beside torch.optim.AdamW(foreach=True) and the measured memory bandwidth.
#
#   scripts/bench-cpu-adamw.sh [--big] [--reps N] [--sizes 1e6,1e7,1e8] [--threads 1,2]
#
# Installs Debian's python3-torch with apt-get when /usr/bin/python3 cannot import torch (needs
# root or sudo), configures and builds target cpu_adamw in $BUILD_DIR (default build/), runs the
# torch peer and then bench/cpu_adamw, and writes both CSVs to $OUT_DIR (default
# $BUILD_DIR/bench-out). --big adds n = 1e9 (about 16 GB of host memory for the C run alone).
# The last line printed is cpu_adamw's summary:
#   cpu_adamw: <GB/s> GB/s = <P>% of measured memory bandwidth, <S>x torch AdamW
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
out=${OUT_DIR:-$build/bench-out}
py=/usr/bin/python3

sizes=1e6,1e7,1e8
threads=""
reps=5
while [ $# -gt 0 ]; do
  case "$1" in
    --big) sizes="$sizes,1e9" ;;
    --sizes) sizes=$2; shift ;;
    --threads) threads=$2; shift ;;
    --reps) reps=$2; shift ;;
    *) echo "bench-cpu-adamw: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

# torch for the peer: Debian's package, through apt-get.
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "bench-cpu-adamw: installing python3-torch with apt-get"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo -n"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends python3-torch ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends python3-torch; }
fi

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --target cpu_adamw -j"$(nproc)"
bench="$build/bench/cpu_adamw"
mkdir -p "$out"
[ -n "$threads" ] || threads=$("$bench" --list-threads)

echo "== machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== torch.optim.AdamW(foreach=True): sizes $sizes, threads $threads"
"$py" "$root/bench/peers/torch_adamw.py" --sizes "$sizes" --threads "$threads" --reps "$reps" \
  --csv "$out/torch_adamw.csv"
echo "== zshard CPU AdamW"
"$bench" --sizes "$sizes" --threads "$threads" --reps "$reps" --csv "$out/cpu_adamw.csv" \
  --torch-csv "$out/torch_adamw.csv"
