#!/usr/bin/env bash
# The capacity benchmark (issue 18, section 4): under a fixed per-rank memory cap, the largest
# GPT that train_gpt2 trains for 3 steps on 2 ranks at stage 3 on the CPU device, per
# optimizer-state mode, found by bisection over the depth at a fixed width, beside the planner's
# (zshard-plan's) prediction of the largest size.
#
#   bench/capacity.sh [--cap 512M] [--width 192] [--max-depth 256] [--steps 3] [--modes a,b,...]
#                     [--probe-timeout 60 (seconds per run; a run past it counts as not fitting)]
#                     [--recompute (every mode recomputes activations: train_gpt2's and the
#                     planner's --recompute; the per-layer bytes are then model state alone)]
#   bench/capacity.sh --self-test      the bisection against planted answers; runs nothing else
#
# The cap: a cgroup v2 group per rank with memory.max = cap and memory.swap.max = 0, created
# under /sys/fs/cgroup when that is a writable cgroup2 mount with the memory controller; else
# RLIMIT_AS (ulimit -v = cap) per rank, which caps address space, not resident memory: every
# shared library and reserved arena counts. The first line says which. Each rank joins its cap
# in a wrapper before exec'ing train_gpt2, so the cap is per rank.
#
# The model: GPT-2 shapes with width C (--width, default 192; 4 heads), sequence 32, micro-batch
# 1, vocabulary 256 (the bundled text), depth L searched in [1, --max-depth]. A size "fits" when
# `mpirun -np 2 train_gpt2 --stage 3 --steps 3 ...` exits 0 having logged step 3 (the engine's
# commit refuses a model it sees will not fit; a run killed by the cap fails too, and so does one
# past --probe-timeout). OpenBLAS's work buffer is allocated at start (blas_warm below), as
# OpenBLAS retries forever when it cannot get it later. Each run is logged on stderr (depth,
# params, trains/fails, seconds).
#
# The planner's prediction: zshard-plan --json for the same shape and mode on 2 ranks at stage 3
# (its GPT-2 shapes count the example's activations, as train_gpt2 allocates them); the largest
# L whose device + host bytes per rank fit in the cap minus the process's fixed cost outside the
# planner (the libraries, MPI's segments, OpenBLAS's buffer, thread stacks, the host arena's
# hwloc plugins with a budget). That fixed cost is calibrated, once per mode, on the mode's own
# depth-1 run: its peak, measured as the cap measures it, minus the planner's bytes for depth 1.
# Everything that grows with the depth is the planner's alone: it is a prediction from one
# depth-1 run, not a fit over depths. (On the CPU device every engine buffer of 64 KiB or more
# is a mapping of its own, src/device/cpu/host_map.h, so the address space a buffer takes is its
# bytes to the page: jemalloc's size classes and its retained, geometrically grown mappings had
# made the measured depth fall 3-20% short of the planner's.) The measured search starts at the
# prediction and gallops from it, so an exact planner costs two runs per mode.
#
# Modes (name | train_gpt2 flags [| environment]): the table MODES below, one line each; a mode
# whose flags train_gpt2 refuses ("--master is one of ...") prints "not built" and is skipped, and one the
# engine refuses at depth 1 prints its reason. Every mode is also run with --offload-budget
# (half the cap): on the CPU device the budget bounds the engine's non-arena bytes and the host
# tier is the same memory, so these rows show what the placement costs, not a gain.
# The nvme mode (issue 20) puts every unit's optimizer state on the NVMe tier: fp32 states with
# --offload opt, ZS_NVME_PATH = a folder under the build directory (a disk, not tmpfs) and
# ZS_OFFLOAD_HOST_BYTES = the tier's staging (36 x the 4 MiB offload_chunk) + 16 MiB, so a rank
# holds its params, grads, activations and the staging, not the state; the planner gets the same
# as --nvme-path/--offload-host-bytes. It has no +budget row (its host budget is the point).
# nvme_remainder and nvme_lean do the same in those precision modes (bf16 moments): the tier then
# holds 6 and 4 bytes per parameter, the staging 18 and 12 x the chunk, and the rank keeps its
# bf16 params and grads (plus the example's fp32 widening scratch on the CPU device).
# Output, per mode: capacity: <mode> <params> params under <cap> (depth L; planner: ...)
# and last:         capacity: largest <P> params (<x>x fp32 states) under <cap> per rank
# Environment: BUILD_DIR (default build-cpu when it has train_gpt2, else build), MPIEXEC.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# name|flags. fp32 states = fp32 params + fp32 master + fp32 m, v: 20 B/param; params: 16; bf16
# moments: 16; both: 12; lean (bf16 params and grads, bf16 m, v; on the CPU device the example
# computes in fp32 on widened units, examples/common/widen.h): 8.
MODES=(
  "fp32_states|"
  "master_params|--master params"
  "bf16_moments|--moment-dtype bf16"
  "params_bf16|--master params --moment-dtype bf16"
  "remainder|--dtype bf16 --master remainder --moment-dtype bf16"
  "lean|--dtype bf16 --master lean --moment-dtype bf16"
  "nvme|--offload opt|ZS_NVME_PATH=%NVME% ZS_OFFLOAD_HOST_BYTES=$((36 * (4 << 20) + (16 << 20)))"
  "nvme_remainder|--dtype bf16 --master remainder --moment-dtype bf16 --offload opt|ZS_NVME_PATH=%NVME% ZS_OFFLOAD_HOST_BYTES=$((18 * (4 << 20) + (16 << 20)))"
  "nvme_lean|--dtype bf16 --master lean --moment-dtype bf16 --offload opt|ZS_NVME_PATH=%NVME% ZS_OFFLOAD_HOST_BYTES=$((12 * (4 << 20) + (16 << 20)))"
)

cap_arg=512M
width=192
max_depth=256
steps=3
probe_timeout=60
only=""
recompute="" # --recompute: every mode (and its planner) recomputes activations
self_test=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cap) cap_arg=$2; shift ;;
    --width) width=$2; shift ;;
    --max-depth) max_depth=$2; shift ;;
    --steps) steps=$2; shift ;;
    --probe-timeout) probe_timeout=$2; shift ;;
    --modes) only=",$2," ; shift ;;
    --recompute) recompute=" --recompute" ;;
    --self-test) self_test=1 ;;
    -h | --help) sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "capacity: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

probes=0
# largest_fitting PROBE START MAX: the largest L in [1, MAX] for which `PROBE L` succeeds (0 when
# PROBE 1 fails), for a PROBE monotone in L (fits at L => fits below L). Starts at START (the
# prediction, clamped to [1, MAX]), gallops up or down from it with steps 1, 2, 4, ... until the
# answer is bracketed, then bisects; never probes outside [1, MAX] nor one L twice. Counts its
# probes in $probes. Sets $fit_result to the answer (no subshell: the probes' state survives).
largest_fitting() {
  local probe=$1 x=$2 max=$3 lo=0 hi step mid
  hi=$((max + 1)) # lo fits (0: nothing known to fit), hi does not (MAX + 1: never probed)
  [ "$x" -lt 1 ] && x=1
  [ "$x" -gt "$max" ] && x=$max
  probes=$((probes + 1))
  if "$probe" "$x"; then
    lo=$x
    step=1
    while [ $((lo + 1)) -lt "$hi" ]; do
      x=$((lo + step))
      [ "$x" -ge "$hi" ] && x=$((hi - 1))
      probes=$((probes + 1))
      if "$probe" "$x"; then lo=$x; step=$((step * 2)); else hi=$x; break; fi
    done
  else
    hi=$x
    step=1
    while [ "$hi" -gt 1 ]; do
      x=$((hi - step))
      [ "$x" -lt 1 ] && x=1
      probes=$((probes + 1))
      if "$probe" "$x"; then lo=$x; break; else hi=$x; step=$((step * 2)); fi
    done
  fi
  while [ $((lo + 1)) -lt "$hi" ]; do
    mid=$(((lo + hi) / 2))
    probes=$((probes + 1))
    if "$probe" "$mid"; then lo=$mid; else hi=$mid; fi
  done
  fit_result=$lo
}

if [ "$self_test" = 1 ]; then
  # Planted answers K in 0..40 (0: nothing fits), predictions below, at, above K and at the ends:
  # largest_fitting must return K exactly, probe only inside [1, 40], never one L twice.
  seen=""
  planted=0
  fake() {
    if [ "$1" -lt 1 ] || [ "$1" -gt 40 ]; then echo "capacity self-test: FAIL probe $1 outside [1, 40]"; exit 1; fi
    case " $seen " in *" $1 "*) echo "capacity self-test: FAIL probe $1 twice"; exit 1 ;; esac
    seen="$seen $1"
    [ "$1" -le "$planted" ]
  }
  cases=0 worst=0
  for planted in $(seq 0 40); do
    for start in 1 $planted $((planted - 3)) $((planted + 1)) $((planted + 5)) \
      $((planted * 2)) 40 0 99; do
      seen=""
      probes=0
      largest_fitting fake "$start" 40
      ans=$fit_result n=$probes
      if [ "$ans" != "$planted" ]; then
        echo "capacity self-test: FAIL planted $planted, start $start: got $ans"
        exit 1
      fi
      [ "$n" -gt "$worst" ] && worst=$n
      if [ "$start" = "$planted" ] && [ "$planted" -gt 0 ] && [ "$planted" -lt 40 ] &&
        [ "$n" != 2 ]; then
        echo "capacity self-test: FAIL an exact start costs $n probes, not 2 (planted $planted)"
        exit 1
      fi
      cases=$((cases + 1))
    done
  done
  echo "capacity self-test: $cases cases OK (answers 0..40, starts below/at/above), at most" \
    "$worst probes, an exact start 2"
  exit 0
fi

build=${BUILD_DIR:-}
if [ -z "$build" ]; then
  build=$root/build
  [ -x "$root/build-cpu/examples/train_gpt2" ] && build=$root/build-cpu
fi
exe=$build/examples/train_gpt2
plan=$build/tools/zshard-plan
for f in "$exe" "$plan"; do
  [ -x "$f" ] || { echo "capacity: $f is not built (cmake --build $build --target train_gpt2 zshard-plan)" >&2; exit 2; }
done
mpiexec=${MPIEXEC:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# A rank whose peer died under the cap (MPI's own allocations fail too) leaves its collective
# after this many seconds instead of the default 300.
export ZS_COMM_TIMEOUT_S=${ZS_COMM_TIMEOUT_S:-30}
# One malloc arena: glibc reserves 64 MiB of address space per extra thread arena, which RLIMIT_AS
# would count against the model. Ranks yield when idle (2 ranks may share a core).
export MALLOC_ARENA_MAX=1 OMPI_MCA_mpi_yield_when_idle=1

# The cap in bytes (K M G suffixes, binary).
to_bytes() {
  local v=${1%iB} m=1
  case "$v" in
    *[kK]) m=1024; v=${v%?} ;;
    *M) m=$((1024 * 1024)); v=${v%?} ;;
    *G) m=$((1024 * 1024 * 1024)); v=${v%?} ;;
  esac
  awk -v v="$v" -v m="$m" 'BEGIN { if (v !~ /^[0-9.]+$/) exit 1; printf "%.0f\n", v * m }'
}
cap=$(to_bytes "$cap_arg") || { echo "capacity: --cap wants e.g. 768M or 1G" >&2; exit 2; }
cap_h=$(awk -v b="$cap" 'BEGIN { if (b % 1073741824 == 0) printf "%d GiB", b / 1073741824;
  else printf "%d MiB", b / 1048576 }')
budget=$((cap / 2))
work=$(mktemp -d)
# The nvme mode's tier directory: on the build directory's disk (mktemp's /tmp may be tmpfs).
nvme_dir=$build/capacity-nvme.$$
mkdir -p "$nvme_dir"
cg=""
cleanup() {
  if [ -n "$cg" ]; then
    for d in "$cg"/*/; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done
    rmdir "$cg" 2>/dev/null || true
  fi
  rm -rf "$work" "$nvme_dir"
}
trap cleanup EXIT

# Which cap: a cgroup v2 group we can create with the memory controller, else RLIMIT_AS.
method=rlimit
why=""
fstype=$(stat -fc %T /sys/fs/cgroup 2>/dev/null || echo none)
if [ "$fstype" = cgroup2fs ]; then
  cg=/sys/fs/cgroup/zshard-capacity-$$
  if mkdir "$cg" 2>/dev/null && grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null &&
    echo +memory >"$cg/cgroup.subtree_control" 2>/dev/null; then
    method=cgroup2
  else
    why="cgroup2 at /sys/fs/cgroup but no group with the memory controller can be made here"
    rmdir "$cg" 2>/dev/null || true
    cg=""
  fi
else
  why="/sys/fs/cgroup is $fstype, not cgroup2 (this script makes only cgroup v2 groups)"
fi
if [ "$method" = cgroup2 ]; then
  echo "capacity: cap $cap_h per rank: cgroup v2 memory.max (memory.swap.max 0), group $cg/rankN"
else
  echo "capacity: cap $cap_h per rank: RLIMIT_AS (ulimit -v; address space, libraries and" \
    "reserved arenas included): $why"
fi

# The per-rank wrapper: joins the cap, runs train_gpt2, records its peak (VmPeak under
# RLIMIT_AS: what the cap measures; memory.peak or VmHWM under the cgroup) in $PEAK.<rank>.
cat >"$work/rank.sh" <<'EOF'
#!/usr/bin/env bash
r=${OMPI_COMM_WORLD_RANK:-0}
if [ "$CAP_METHOD" = cgroup2 ]; then
  g=$CAP_CG/rank$r
  mkdir -p "$g"
  echo "$CAP_BYTES" >"$g/memory.max"
  echo 0 >"$g/memory.swap.max" 2>/dev/null || true
  echo $$ >"$g/cgroup.procs"
else
  ulimit -v $((CAP_BYTES / 1024))
fi
[ -n "$CAP_PRELOAD" ] && export LD_PRELOAD=$CAP_PRELOAD
"$@" &
pid=$!
key=VmPeak
[ "$CAP_METHOD" = cgroup2 ] && key=VmHWM
while kill -0 "$pid" 2>/dev/null; do
  p=$(awk -v k="$key:" '$1 == k { print $2 * 1024 }' "/proc/$pid/status" 2>/dev/null)
  [ -n "$p" ] && echo "$p" >"$PEAK.$r"
  sleep 0.1
done
wait "$pid"
rc=$?
if [ "$CAP_METHOD" = cgroup2 ] && [ -r "$g/memory.peak" ]; then cat "$g/memory.peak" >"$PEAK.$r"; fi
exit $rc
EOF
chmod +x "$work/rank.sh"
# OpenBLAS allocates its 128 MiB work buffer at the first matmul and, when the address space is
# exhausted then, retries forever instead of failing. A preloaded constructor makes one tiny
# sgemm at start, so the buffer exists before the engine commits (the same bytes, only sooner):
# the engine's commit check then sees the room that is really left and refuses at once.
cat >"$work/blas_warm.c" <<'EOF'
void cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int,
                 float, float *, int);
__attribute__((constructor)) static void blas_warm(void) {
  float a = 1, b = 1, c = 0;
  cblas_sgemm(101, 111, 111, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
}
EOF
preload=""
if ldd "$exe" | grep -q libopenblas && cc -shared -fPIC -o "$work/blas_warm.so" \
  "$work/blas_warm.c" -lopenblas 2>/dev/null; then
  preload=$work/blas_warm.so
fi
export CAP_METHOD=$method CAP_BYTES=$cap CAP_CG=$cg CAP_PRELOAD=$preload

heads=4
seq=32
shape() { # depth -> train_gpt2 / zshard-plan shape flags
  echo "--layers $1 --channels $width --heads $heads --seq $seq --batch 1 --stage 3$recompute"
}
nparams() { # depth -> parameters (gpt2_num_params: vocab 256 padded to 256, positions = seq)
  echo $((256 * width + seq * width + $1 * (12 * width * width + 13 * width) + 2 * width))
}

flags=""
menv="" # the current mode's environment (KEY=VALUE ...)
last_log=""
# train_probe L: 2 ranks train 3 steps at depth L under the cap with the current mode's $flags.
train_probe() {
  local log=$work/run.log
  last_log=$log
  rm -f "$work"/peak.*
  if [ "$method" = cgroup2 ]; then for r in 0 1; do rmdir "$cg/rank$r" 2>/dev/null || true; done; fi
  # shellcheck disable=SC2046,SC2086
  local t0=$SECONDS ok=1
  PEAK=$work/peak env $menv timeout "$probe_timeout" "$mpiexec" --oversubscribe -np 2 "$work/rank.sh" \
    "$exe" $(shape "$1") --max-seq "$seq" --steps "$steps" --val-frac 0.01 --eval-every 0 \
    --sample-lines 0 --log-every 1 $flags >"$log" 2>&1 && grep -q "step *$steps/$steps" "$log" ||
    ok=0
  echo "capacity:   depth $1 ($(nparams "$1") params) $flags: $([ $ok = 1 ] && echo trains ||
    echo fails) ($((SECONDS - t0)) s)" >&2
  [ $ok = 1 ]
}

baseline=0
# plan_probe L: zshard-plan's device + host bytes per rank for depth L fit in cap - baseline.
plan_probe() {
  local js
  # shellcheck disable=SC2046,SC2086
  js=$("$plan" $(shape "$1") --max-seq "$seq" --vocab 256 --world 2 --device cpu --json \
    --host-mem "$cap" --device-mem "$cap" $pflags 2>/dev/null) || return 1
  python3 -c 'import json,sys; r=json.loads(sys.argv[1])["per_rank"]
sys.exit(0 if r["device_total"] + r["host_total"] <= int(sys.argv[2]) else 1)' "$js" \
    $((cap - baseline))
}
plan_bytes() { # L -> the planner's device + host bytes per rank
  # shellcheck disable=SC2046,SC2086
  "$plan" $(shape "$1") --max-seq "$seq" --vocab 256 --world 2 --device cpu --json $pflags |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["per_rank"]
print(r["device_total"] + r["host_total"])'
}

# The depth-1 fp32 run first: a cap too small for anything stops here.
flags="" pflags=""
if ! train_probe 1; then
  echo "capacity: the depth-1 model does not train under $cap_h per rank:"
  tail -3 "$last_log"
  exit 1
fi
echo "capacity: width $width, $heads heads, seq $seq, batch 1, 2 ranks, stage 3, $steps steps;" \
  "each mode's fixed cost = its depth-1 run's peak minus the planner's bytes for it;" \
  "offload budget rows: --offload-budget $budget (cap/2)"

largest=0 largest_mode="" fp32_params=0
t_start=$(date +%s)
for entry in "${MODES[@]}"; do
  name=${entry%%|*}
  mflags=${entry#*|}
  mflags=${mflags%%|*}
  menv=""
  case "$entry" in *"|"*"|"*) menv=${entry##*|} ;; esac
  menv=${menv//%NVME%/$nvme_dir}
  tierflags="" # the planner's flags for the environment's tier
  for kv in $menv; do
    case "$kv" in
      ZS_NVME_PATH=*) tierflags="$tierflags --nvme-path ${kv#*=}" ;;
      ZS_OFFLOAD_HOST_BYTES=*) tierflags="$tierflags --offload-host-bytes ${kv#*=}" ;;
    esac
  done
  for variant in "" "+budget"; do
    [ -n "$menv" ] && [ -n "$variant" ] && continue
    label=$name$variant
    [ -n "$only" ] && case "$only" in *",$label,"* | *",$name,"*) ;; *) continue ;; esac
    flags=$mflags
    [ -n "$variant" ] && flags="$mflags --offload-budget $budget"
    # Flags train_gpt2 does not know: this mode is not in this build.
    # shellcheck disable=SC2086
    if ! "$exe" $flags --help >"$work/help.log" 2>&1; then
      echo "capacity: $label not built ($(grep -m1 -o 'error: .*' "$work/help.log" || tail -1 "$work/help.log"))"
      continue
    fi
    pflags="$flags$tierflags"
    if ! train_probe 1; then
      echo "capacity: $label refused at depth 1: $(grep -m1 -o 'error: .*' "$last_log" | cut -c1-300)"
      continue
    fi
    # This mode's fixed cost (see the header): its depth-1 peak minus the planner's bytes.
    peak=$(cat "$work"/peak.* 2>/dev/null | sort -n | tail -1)
    baseline=$((${peak:-0} - $(plan_bytes 1)))
    largest_fitting plan_probe 1 "$max_depth"
    pred=$fit_result
    probes=0
    largest_fitting train_probe "$pred" "$max_depth"
    got=$fit_result
    p=$(nparams "$got")
    pp=$(nparams "$pred")
    [ "$got" = 0 ] && p=0
    [ "$pred" = 0 ] && pp=0
    echo "capacity: $label $p params under $cap_h (depth $got; planner: $pp params, depth" \
      "$pred; fixed cost $((baseline / 1048576)) MiB; $((probes + 1)) runs)"
    [ "$label" = fp32_states ] && fp32_params=$p
    if [ "$p" -gt "$largest" ]; then largest=$p; largest_mode=$label; fi
  done
done
if [ "$fp32_params" -gt 0 ]; then
  x=$(awk -v a="$largest" -v b="$fp32_params" 'BEGIN { printf "%.2f", a / b }')
else
  x="n/a"
fi
echo "capacity: searched in $(($(date +%s) - t_start)) s; largest mode: $largest_mode"
echo "capacity: largest $largest params (${x}x fp32 states) under $cap_h per rank"
