#!/usr/bin/env bash
# CPU AdamW benchmark per optimizer-state mode, paired with DeepSpeed's CPUAdam and
# torch.optim.AdamW(foreach=True) on arrays of the same sizes, beside the measured memory
# bandwidth.
#
#   scripts/bench-cpu-adamw.sh [--big] [--reps N] [--sizes 1e6,1e7,1e8] [--threads 1,2]
#                              [--bw-n N] [--no-deepspeed] [--ab N]
#
# Installs Debian's python3-torch with apt-get when /usr/bin/python3 cannot import torch, and
# for the DeepSpeed peer Debian's libtorch-dev and pybind11-dev (torch's C++ headers) and
# DeepSpeed's source (`pip download deepspeed==$DS_VERSION --no-deps --no-binary :all:`, default
# 0.19.8, kept in $OUT_DIR/deepspeed; or DS_SRC=DIR, an unpacked tree); needs root or sudo.
# Configures and builds target cpu_adamw in $BUILD_DIR (default build/), runs the peers
# (bench/peers/deepspeed_cpu_adam.py compiles DeepSpeed's csrc/adam/cpu_adam_impl.cpp as
# DeepSpeed's own builder does; bench/peers/torch_adamw.py) and then bench/cpu_adamw, and writes
# the CSVs to $OUT_DIR (default $BUILD_DIR/bench-out). When DeepSpeed's op cannot be had, it says
# why and the rows are paired with torch alone. --big adds n = 1e9 (about 16 GB of host memory
# for the C run alone); --bw-n sets the triad's elements (default 1e8: 1.6 GB). --ab N: instead,
# N rounds that alternate DeepSpeed's CPUAdam and zshard (no torch), then the median per-round
# ratio of each same-bytes pair (fp32_states and fp32_mixed / ds_fp32, lean_m16 / ds_bf16) per
# thread count: on a shared VM whose speed drifts between runs minutes apart, the pairs a few
# seconds apart are the ratio to quote.
# Per mode: cpu_adamw mode <name>: <GB/s> GB/s, <G> Gparam/s, <P>% of triad, <S>x ds_fp32 params/s;
#   best thread counts: <G> vs <Gpeer> Gparam/s, <B>x   (each side at its fastest thread count)
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
bw_n=1e8
deepspeed=1
ab=0
while [ $# -gt 0 ]; do
  case "$1" in
    --big) sizes="$sizes,1e9" ;;
    --sizes) sizes=$2; shift ;;
    --threads) threads=$2; shift ;;
    --reps) reps=$2; shift ;;
    --bw-n) bw_n=$2; shift ;;
    --no-deepspeed) deepspeed=0 ;;
    --ab) ab=$2; shift ;;
    *) echo "bench-cpu-adamw: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

# torch for the peer: Debian's package, through apt-get.
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo -n"
export DEBIAN_FRONTEND=noninteractive
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "bench-cpu-adamw: installing python3-torch with apt-get"
  $sudo apt-get install -y --no-install-recommends python3-torch ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends python3-torch; }
fi

# DeepSpeed's CPUAdam: torch's C++ headers, pybind11 and DeepSpeed's source.
ds_src=${DS_SRC:-}
if [ "$deepspeed" = 1 ] && [ -z "$ds_src" ]; then
  if [ ! -f /usr/include/torch/extension.h ] || [ ! -f /usr/include/pybind11/pybind11.h ]; then
    echo "bench-cpu-adamw: installing libtorch-dev and pybind11-dev with apt-get (DeepSpeed peer)"
    $sudo apt-get install -y --no-install-recommends libtorch-dev pybind11-dev ||
      { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends libtorch-dev \
        pybind11-dev; } || echo "bench-cpu-adamw: no torch C++ headers: no DeepSpeed peer"
  fi
  ds_version=${DS_VERSION:-0.19.8}
  mkdir -p "$out/deepspeed"
  if [ ! -d "$out/deepspeed/deepspeed-$ds_version" ]; then
    "$py" -m pip download "deepspeed==$ds_version" --no-deps --no-binary :all: \
      -d "$out/deepspeed" >"$out/deepspeed/download.log" 2>&1 &&
      tar -xzf "$out/deepspeed/deepspeed-$ds_version.tar.gz" -C "$out/deepspeed" ||
      echo "bench-cpu-adamw: could not download DeepSpeed $ds_version's source" \
        "(see $out/deepspeed/download.log): no DeepSpeed peer"
  fi
  [ -d "$out/deepspeed/deepspeed-$ds_version" ] && ds_src=$out/deepspeed/deepspeed-$ds_version
fi

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --target cpu_adamw -j"$(nproc)"
bench="$build/bench/cpu_adamw"
mkdir -p "$out"
[ -n "$threads" ] || threads=$("$bench" --list-threads)

if [ "$ab" -gt 0 ]; then
  [ -n "$ds_src" ] || { echo "bench-cpu-adamw: --ab needs DeepSpeed's CPUAdam" >&2; exit 1; }
  echo "== A/B: $ab rounds of DeepSpeed CPUAdam then zshard, sizes $sizes, threads $threads"
  for r in $(seq "$ab"); do
    "$py" "$root/bench/peers/deepspeed_cpu_adam.py" --ds-src "$ds_src" \
      --build-dir "$out/deepspeed/build" --sizes "$sizes" --threads "$threads" --reps "$reps" \
      --csv "$out/ab_ds_$r.csv" >"$out/ab_ds_$r.log" 2>&1
    "$bench" --sizes "$sizes" --threads "$threads" --reps "$reps" --bw-n "$bw_n" \
      --csv "$out/ab_zs_$r.csv" >/dev/null
    echo "round $r done $(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg)"
  done
  exec "$py" - "$out" "$ab" <<'PY'
import csv, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def rows(path):
    return {(r["kind"], int(r["n"]), int(r["threads"])): float(r["params_per_s"])
            for r in csv.DictReader(open(path))}
ratios = {}
for r in range(1, rounds + 1):
    ds, zs = rows(f"{out}/ab_ds_{r}.csv"), rows(f"{out}/ab_zs_{r}.csv")
    for mine, peer in [(m, "ds_fp32") for m in ("fp32_states", "fp32_mixed")] + [("lean_m16", "ds_bf16")]:
        for (kind, n, t), v in zs.items():
            if kind == mine and (peer, n, t) in ds:
                ratios.setdefault((mine, peer, n, t), []).append((v, ds[(peer, n, t)]))
for (mine, peer, n, t), pairs in sorted(ratios.items()):
    med = statistics.median(a / b for a, b in pairs)
    print(f"cpu_adamw ab {mine}/{peer} n={n:.0e} threads={t}: median ratio {med:.3f} over "
          f"{len(pairs)} rounds (Gparam/s medians {statistics.median(a for a, _ in pairs) / 1e9:.3f}"
          f" vs {statistics.median(b for _, b in pairs) / 1e9:.3f})")
PY
fi

echo "== machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "== torch.optim.AdamW(foreach=True): sizes $sizes, threads $threads"
"$py" "$root/bench/peers/torch_adamw.py" --sizes "$sizes" --threads "$threads" --reps "$reps" \
  --csv "$out/torch_adamw.csv"
peers=(--peer-csv "$out/torch_adamw.csv")
if [ -n "$ds_src" ]; then
  echo "== DeepSpeed CPUAdam ($ds_src): sizes $sizes, threads $threads"
  if "$py" "$root/bench/peers/deepspeed_cpu_adam.py" --ds-src "$ds_src" \
    --build-dir "$out/deepspeed/build" --sizes "$sizes" --threads "$threads" --reps "$reps" \
    --csv "$out/deepspeed_cpu_adam.csv"; then
    peers+=(--peer-csv "$out/deepspeed_cpu_adam.csv")
  else
    echo "bench-cpu-adamw: DeepSpeed's CPUAdam did not build or run (above): torch is the peer"
  fi
fi
echo "== zshard CPU AdamW"
"$bench" --sizes "$sizes" --threads "$threads" --reps "$reps" --bw-n "$bw_n" \
  --csv "$out/cpu_adamw.csv" "${peers[@]}"
