#!/usr/bin/env bash
# The NVMe tier's capacity demonstration (issue 20, "Benchmark"): under a per-rank memory cap
# smaller than half the model's optimizer state, training runs with the state on the tier, and
# its final weights equal an uncapped host-offload run's bit for bit (and its logged losses).
#
# Interpretation: "half the model's optimizer state" is half of the whole model's state (fp32
# master + m + v = 12 B/param over all params); the check below refuses to run unless
# cap < 12 x params / 2. With 2 ranks at stage 3 each rank owns half the state (6 B/param), so
# the cap is also below one rank's own share: the state cannot be in memory.
#
# Both runs: examples' train_gpt2 on 2 ranks (mpirun), CPU device, stage 3, --offload opt, fp32
# params, grads, master and moments (the tier needs fp32 master and moments), the same seed and
# data, --steps S, GPT-2 shape: --layers L --channels C, 4 heads, seq 32, micro-batch 1,
# vocabulary 256 (the bundled text).
#  - tier run: each rank under RLIMIT_AS (ulimit -v = the cap; cgroup v2 is not writable on this
#    machine; address space counts every library and reserved arena, so it is the stricter cap),
#    ZS_NVME_PATH=<DIR> and ZS_OFFLOAD_HOST_BYTES = the tier's staging (36 x offload_chunk) +
#    16 MiB, so every unit's optimizer state is on disk;
#  - host-offload run: no tier (the state in host memory), under a loose ulimit -v (4 x the cap,
#    only as the machine's safety limit).
# OpenBLAS's 128 MiB work buffer is allocated by a preloaded constructor at start (as in
# bench/capacity.sh): OpenBLAS retries forever when it cannot get it later under RLIMIT_AS.
# The comparison: every step's logged loss (--metrics JSONL, 6 decimals: the example logs no
# more) and the final weights (--dump-weights, every tensor's fp32 bytes, cmp): equal weights
# after the last step and equal losses at every step. Also the tier run's peak address space
# (VmPeak, the larger rank's) and the planner's bytes for the same run (zshard-plan).
# Last line:
#   nvme: capacity: <P> params (<S> GiB optimizer state) trained under <cap> per rank with the
#   tier; losses equal to host offload bit for bit: yes|NO (...)
# Run from the build directory: bash ../bench/nvme_capacity.sh [--dir DIR (a real disk, not
#   tmpfs; default: nvme-capacity under the build directory)] [--layers 64] [--channels 768]
#   [--cap 2560M (K/M/G suffixes, binary)] [--steps 4]
# bench/nvme.sh runs it after its engine step unless --no-capacity. Exits 1 when the tier run
# fails or the runs differ.
set -euo pipefail
DIR=""
L=64
C=768
CAP_ARG=2560M
STEPS=4
while [ $# -gt 0 ]; do
  case "$1" in
  --dir) DIR=$2; shift ;;
  --layers) L=$2; shift ;;
  --channels) C=$2; shift ;;
  --cap) CAP_ARG=$2; shift ;;
  --steps) STEPS=$2; shift ;;
  *) sed -n '2,34p' "$0"; exit 2 ;;
  esac
  shift
done
exe=examples/train_gpt2
plan=tools/zshard-plan
for f in "$exe" "$plan"; do
  [ -x "$f" ] || { echo "nvme_capacity.sh: run from the build directory ($f not built)" >&2; exit 2; }
done
[ -n "$DIR" ] || DIR=$PWD/nvme-capacity
mkdir -p "$DIR"
fs=$(stat -fc %T "$DIR")
[ "$fs" != tmpfs ] || { echo "nvme_capacity.sh: $DIR is tmpfs; the tier needs a disk (O_DIRECT)" >&2; exit 2; }
work=$(mktemp -d "$DIR/run.XXXXXX")
trap 'rm -rf "$work"' EXIT

to_bytes() { # 2560M, 2.5G -> bytes (binary suffixes)
  local v=${1%iB} m=1
  case "$v" in
  *[kK]) m=1024; v=${v%?} ;;
  *M) m=1048576; v=${v%?} ;;
  *G) m=1073741824; v=${v%?} ;;
  esac
  awk -v v="$v" -v m="$m" 'BEGIN { if (v !~ /^[0-9.]+$/) exit 1; printf "%.0f\n", v * m }'
}
cap=$(to_bytes "$CAP_ARG") || { echo "nvme_capacity.sh: --cap wants e.g. 2560M" >&2; exit 2; }
gib() { awk -v b="$1" 'BEGIN { printf "%.2f GiB", b / 1073741824 }'; }
seq=32
params=$((256 * C + seq * C + L * (12 * C * C + 13 * C) + 2 * C)) # gpt2_num_params, vocab 256
state=$((12 * params))
if [ "$cap" -ge $((state / 2)) ]; then
  echo "nvme_capacity.sh: cap $(gib "$cap") is not below half the optimizer state" \
    "($(gib $((state / 2)))): raise --layers or lower --cap" >&2
  exit 2
fi
chunk=$((4 << 20)) # offload_chunk's default: the tier's staging is 36 x chunk
hostb=$((36 * chunk + (16 << 20)))

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MALLOC_ARENA_MAX=1 OMPI_MCA_mpi_yield_when_idle=1
export ZS_COMM_TIMEOUT_S=${ZS_COMM_TIMEOUT_S:-120}
# The per-rank wrapper: ulimit -v, the OpenBLAS warm-up, the rank's VmPeak in $PEAK.<rank>.
cat >"$work/rank.sh" <<'EOF'
#!/usr/bin/env bash
r=${OMPI_COMM_WORLD_RANK:-0}
ulimit -v $((CAP_BYTES / 1024))
[ -n "$CAP_PRELOAD" ] && export LD_PRELOAD=$CAP_PRELOAD
"$@" &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  p=$(awk '$1 == "VmPeak:" { print $2 * 1024 }' "/proc/$pid/status" 2>/dev/null)
  [ -n "$p" ] && echo "$p" >"$PEAK.$r"
  sleep 0.2
done
wait "$pid"
EOF
chmod +x "$work/rank.sh"
cat >"$work/blas_warm.c" <<'EOF'
void cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int,
                 float, float *, int);
__attribute__((constructor)) static void blas_warm(void) {
  float a = 1, b = 1, c = 0;
  cblas_sgemm(101, 111, 111, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
}
EOF
preload=""
if ldd "$exe" | grep -q libopenblas &&
  cc -shared -fPIC -o "$work/blas_warm.so" "$work/blas_warm.c" -lopenblas 2>/dev/null; then
  preload=$work/blas_warm.so
fi
shape="--layers $L --channels $C --heads 4 --seq $seq --max-seq $seq --batch 1 --stage 3"

# run NAME CAP_BYTES [ENV=VALUE ...]: train_gpt2 on 2 ranks; log, metrics, weights in $work/NAME.
run() {
  local name=$1 capb=$2 t0=$SECONDS
  shift 2
  mkdir -p "$work/$name/w"
  # shellcheck disable=SC2086
  if ! env "$@" CAP_BYTES="$capb" CAP_PRELOAD="$preload" PEAK="$work/$name/peak" \
    ${MPIEXEC:-mpirun} --oversubscribe -np 2 "$work/rank.sh" "$exe" $shape --offload opt \
    --dtype fp32 --master fp32 --steps "$STEPS" --val-frac 0.01 --eval-every 0 \
    --sample-lines 0 --log-every 1 --metrics "$work/$name/m.jsonl" \
    --dump-weights "$work/$name/w" >"$work/$name/log" 2>&1 ||
    ! grep -q "step *$STEPS/$STEPS" "$work/$name/log"; then
    echo "nvme: capacity: the $name run failed ($((SECONDS - t0)) s); its log's tail:"
    tail -5 "$work/$name/log"
    return 1
  fi
  echo "nvme: capacity: $name run: $STEPS steps in $((SECONDS - t0)) s, peak address space" \
    "$(gib "$(cat "$work/$name"/peak.* | sort -n | tail -1)") (the larger rank)"
}
losses() { grep -o '"loss":[^,]*' "$1" | cut -d: -f2 | tr '\n' ' '; }

pjs=$("$plan" $shape --vocab 256 --world 2 --device cpu --offload opt --nvme-path "$work/nvme" \
  --offload-host-bytes "$hostb" --json)
pbytes=$(echo "$pjs" | python3 -c 'import json,sys; r=json.load(sys.stdin)["per_rank"]
print(r["device_total"] + r["host_total"])')
echo "nvme: capacity: GPT L=$L C=$C (seq $seq, batch 1), $params params, optimizer state" \
  "$(gib "$state") (half: $(gib $((state / 2)))); cap $(gib "$cap") per rank (RLIMIT_AS);" \
  "planner: $(gib "$pbytes") per rank with the tier (before the process's fixed cost)"
mkdir -p "$work/nvme"
ok=1
run tier "$cap" ZS_NVME_PATH="$work/nvme" ZS_OFFLOAD_HOST_BYTES="$hostb" || ok=0
[ "$ok" = 1 ] && { run host $((4 * cap)) || ok=0; }
same=NO
detail="a run failed"
if [ "$ok" = 1 ]; then
  lt=$(losses "$work/tier/m.jsonl") lh=$(losses "$work/host/m.jsonl")
  nw=$(find "$work/host/w" -type f | wc -l)
  wsame=yes
  for f in "$work/host/w"/*; do cmp -s "$f" "$work/tier/w/${f##*/}" || { wsame=NO; break; }; done
  [ "$(find "$work/tier/w" -type f | wc -l)" = "$nw" ] || wsame=NO
  detail="final weights ($nw tensors) bit for bit: $wsame; losses (the 6 logged decimals): tier [${lt% }], host [${lh% }]"
  [ -n "$lt" ] && [ "$lt" = "$lh" ] && [ "$wsame" = yes ] && same=yes
fi
echo "nvme: capacity: $params params ($(gib "$state") optimizer state) trained under" \
  "$(gib "$cap") per rank with the tier; losses equal to host offload bit for bit: $same ($detail)"
[ "$same" = yes ]
