#!/usr/bin/env bash
# The GPU session's check, in the order its answers matter, inside a lent task's 15 device-minutes.
#
#   scripts/device-first.sh            # call 1 (deadline 435 s): the one prepared call
#   scripts/device-first.sh --call 2   # call 2 (deadline 185 s), on the warm machine, only if at
#                                      # least 4 device-minutes are left after call 1
#   scripts/device-first.sh --plan     # the plan below with its total; exit 1 above 14 minutes
#
# Before a GPU session run scripts/device-rehearsal.sh on the commit that travels: it makes the
# prebuilt tree (.deps/prebuilt.tar.xz) for exactly those sources; a stale one costs a build there.
# Device call: carry [".deps"], timeout_s 480 (call 1) or 230 (call 2); give_back right after
# call 2 (or after call 1 when less than 4 device-minutes are left).
#
# The plan (seconds of device time; an item that ends early leaves its time to the next ones, an
# item never runs past the call's deadline, and the last item of a call takes what is left):
#   machine start 120, transfer of the tree 20 per call, idle 30 after each call
#   call 1 (435): setup 40 (environment facts, the carried dependencies staged, the prebuilt tree
#     unpacked, or built when it is stale or absent: 3-4 min that later items lose; a smoke test)
#     | correct 130 (ctest gpu-t1, one GPU, no multi-rank NCCL: NCCL's one-rank communicator
#     first (the one-rank CUDA engine opens one), every kernel against its CPU twin, AdamW in
#     every master mode against the CPU's bits, the engine at stages 0 and 3 over host-staged
#     MPI, GPT-2 CUDA against the CPU at one rank) | speed 105 (GPT-2 d12 bf16 seq 1024: zshard stage 0 and 3, torch eager,
#     then torch.compile with what is left) | nccl 55 (ctest gpu-t2: 2 ranks on the one GPU,
#     stopping at the first failure) | d12 55 (the kernels at d12 sizes, their benchmark, pinned and
#     pageable copy rates beside the optimizer's copy pipeline, d12 at stage 3 with the optimizer
#     offloaded) | rest 50 (ctest gpu-t3 then gpu-t4 until the deadline)
#   call 2 (185): setup 15 | sanitize 55 (compute-sanitizer memcheck over the kernel tests)
#     | rerun 40 (call 1's failed tests, then its unreached ones, NCCL_DEBUG=WARN) | d48 55 (GPT-2 1.5B at
#     stage 3 with recompute, a few steps) | ckpt 20 (d12 with synchronous, then asynchronous saves:
#     bench/ckpt_async_train.sh)
#   total 120 + 20 + 435 + 30 + 20 + 185 + 30 = 840 s (14 min)
#
# Results land in $OUT (default ./out) as they happen, at most 8 files (the device returns 8):
# summary.txt (one line per item, PENDING at the start, rewritten atomically as each item starts
# and ends, so a call cut off at any point returns everything it finished), setup.log (the
# environment's facts first), tests.log (ctest output as it runs, and each run's full verdict),
# tests.xml (every ctest JUnit report of the call merged), bench.log, bench-csv.txt, sanitize.log:
# seven files, and at most one temporary file beside them at any moment.
#
# Options:
#   --call N        1 or 2
#   --deadline S    the call's deadline in seconds (default 435 / 185)
#   --scale F       multiply every item budget and the deadline by F (the rehearsal on 2 cores)
#   --jobs N        parallelism of a fallback build (default: the cores); the GPU tests run one
#                   at a time (ctest resource lock gpu)
#   --arch A        CMAKE_CUDA_ARCHITECTURES of a fallback build (default native with a GPU)
# Without a GPU everything runs: GPU tests must skip (one that runs anyway is a failure: its skip
# detection is broken), benchmarks print SKIP, the sanitizer says "not run: no GPU".
# Exit status 0 when every item that ran passed.
set -uo pipefail
export TZ=UTC # ctest's --stop-time is a time of day
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
CALL=1 DEADLINE="" SCALE=1 JOBS=$(nproc 2>/dev/null || echo 4) ARCH="" PLAN_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --call) CALL=$2; shift ;;
    --deadline) DEADLINE=$2; shift ;;
    --scale) SCALE=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --arch) ARCH=$2; shift ;;
    --plan) PLAN_ONLY=1 ;;
    -h | --help) sed -n '2,52p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "device-first: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# ---- the plan: item names and budgets per call (seconds) ----
START_S=120 TRANSFER_S=20 IDLE_S=30
ITEMS_1=(setup correct speed nccl d12 rest)
BUDGET_1=(40 130 105 55 55 50)
ITEMS_2=(setup sanitize rerun d48 ckpt)
BUDGET_2=(15 55 40 55 20)
sum() { local s=0 x; for x in "$@"; do s=$((s + x)); done; echo $s; }
if [ $PLAN_ONLY = 1 ]; then
  c1=$(sum "${BUDGET_1[@]}") c2=$(sum "${BUDGET_2[@]}")
  total=$((START_S + TRANSFER_S + c1 + IDLE_S + TRANSFER_S + c2 + IDLE_S))
  echo "device plan: start $START_S + call 1 ($TRANSFER_S + $c1: ${ITEMS_1[*]}) + idle $IDLE_S" \
    "+ call 2 ($TRANSFER_S + $c2: ${ITEMS_2[*]}) + idle $IDLE_S = $total s ($((total / 60)) min $((total % 60)) s)"
  [ "$total" -le 840 ] || { echo "device plan: over 14 minutes"; exit 1; }
  exit 0
fi
case $CALL in
  1) ITEMS=("${ITEMS_1[@]}") BUDGET=("${BUDGET_1[@]}") ;;
  2) ITEMS=("${ITEMS_2[@]}") BUDGET=("${BUDGET_2[@]}") ;;
  *) echo "device-first: --call is 1 or 2" >&2; exit 2 ;;
esac
[ -n "$DEADLINE" ] || DEADLINE=$(sum "${BUDGET[@]}")
scaled() { awk -v x="$1" -v f="$SCALE" 'BEGIN { printf "%d", x * f }'; }
DEADLINE=$(scaled "$DEADLINE")
for i in "${!BUDGET[@]}"; do BUDGET[i]=$(scaled "${BUDGET[i]}"); done

OUT=${OUT:-$REPO/out}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export OUT
HAVE_GPU=0 # nvidia-smi, or the driver's device node where nvidia-smi is not on the PATH
{ nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || ls /dev/nvidia[0-9]* >/dev/null 2>&1; } && HAVE_GPU=1
[ -n "$ARCH" ] || ARCH=$([ $HAVE_GPU = 1 ] && echo native || echo 90-real)
# shellcheck source=scripts/device-env.sh
. "$REPO/scripts/device-env.sh"
export BENCH_OUT=$DEV_BUILD/bench-out
T0=$SECONDS
left() { echo $((DEADLINE - (SECONDS - T0))); } # seconds to the call's deadline
# cap S: S, or less so that it ends 5 s before the deadline (0 when nothing is left): every
# limit an item passes on goes through it, so no item runs past the deadline.
cap() {
  local c=$(($(left) - 5))
  [ "$1" -lt "$c" ] && c=$1
  [ "$c" -gt 0 ] && echo "$c" || echo 0
}

# ---- summary.txt: one line per item, rewritten (temporary file + rename) at every change ----
STATE=() # per item: "PENDING (budget N s)", "RUNNING since N s", "DONE ...", ...
for i in "${!ITEMS[@]}"; do STATE[i]="PENDING (budget ${BUDGET[i]} s)"; done
GPU_NAME=$(nvidia-smi -L 2>/dev/null | head -1)
write_summary() {
  local i
  {
    echo "== device-first call $CALL: ${GPU_NAME:-no GPU}; deadline $DEADLINE s; at $((SECONDS - T0)) s" \
      "($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"
    for i in "${!ITEMS[@]}"; do printf '%d %-9s %s\n' $((i + 1)) "${ITEMS[i]}" "${STATE[i]}"; done
  } >"$OUT/summary.txt.tmp" && mv -f "$OUT/summary.txt.tmp" "$OUT/summary.txt"
}
write_summary
OK=1

# ---- helpers for the items ----
# run_ctest LABEL SECONDS ARGS...: ctest in the build tree on ARGS, stopped (cleanly, with its
# report) at SECONDS from now (less near the deadline); output appended to tests.log, the report
# merged into tests.xml, the failed tests appended to rerun-failed.txt and the unreached ones to
# rerun-unreached.txt (call 2 reruns them). Prints the verdict (totals, then the failed
# and unreached by name); non-zero when a test failed or (unless UNREACHED_OK=1) was not reached.
run_ctest() {
  local label=$1 secs xml stop rc verdict gpu_flag=--no-gpu all=()
  secs=$(cap "$2")
  shift 2
  [ "$secs" -ge 5 ] || { echo "not run: the deadline ($(left) s left)"; return 1; }
  [ $HAVE_GPU = 1 ] && gpu_flag=--gpu
  xml=$DEV_BUILD/junit-$label.xml
  rm -f "$xml" "$DEV_BUILD/rerun-$label.txt" "$DEV_BUILD/unreached-$label.txt"
  stop=$(date -d "@$(($(date +%s) + secs))" +%H:%M:%S)
  echo "== $(date -u +%H:%M:%S) ctest $label: $* (stop $stop)" >>"$OUT/tests.log"
  (cd "$DEV_BUILD" && timeout -k 5 $((secs + 15)) ctest --output-on-failure --output-junit "$xml" \
    --stop-time "$stop" "$@") 2>&1 | tee "$DEV_BUILD/ctest-$label.log" >>"$OUT/tests.log"
  rc=${PIPESTATUS[0]}
  # The test in flight at the stop time is reported as a timeout: it was cut, not failed.
  : >"$DEV_BUILD/cut-$label.txt"
  grep -q 'The stop time has been passed' "$DEV_BUILD/ctest-$label.log" &&
    sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+\*\*\*Timeout.*/\1/p' \
      "$DEV_BUILD/ctest-$label.log" >"$DEV_BUILD/cut-$label.txt"
  (cd "$DEV_BUILD" && ctest -N "$@" | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p') >"$DEV_BUILD/asked-$label.txt"
  mapfile -t gpu_tests < <(cd "$DEV_BUILD" && ctest -N -L '^gpu$' "$@" |
    sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p')
  python3 "$REPO/scripts/ctest-junit-summary.py" $gpu_flag --all "$DEV_BUILD/asked-$label.txt" \
    --cut "$DEV_BUILD/cut-$label.txt" --rerun "$DEV_BUILD/rerun-$label.txt" --unreached "$DEV_BUILD/unreached-$label.txt" "$xml" \
    "${gpu_tests[@]}" >"$DEV_BUILD/verdict-$label.txt" 2>&1
  { echo "-- ctest $label verdict:" && cat "$DEV_BUILD/verdict-$label.txt"; } >>"$OUT/tests.log"
  # No report at all (ctest killed): every test asked for counts as not reached.
  [ -f "$DEV_BUILD/unreached-$label.txt" ] || cp "$DEV_BUILD/asked-$label.txt" "$DEV_BUILD/unreached-$label.txt"
  [ -f "$DEV_BUILD/rerun-$label.txt" ] || cp "$DEV_BUILD/asked-$label.txt" "$DEV_BUILD/rerun-$label.txt"
  verdict=$(grep -E '^([0-9]+ tests|GPU tests|FAILED|  (failed|not reached|FAILED|skipped, no O_DIRECT|GPU tests not reached))' \
    "$DEV_BUILD/verdict-$label.txt" | tr -s ' \n' ' ')
  # Call 2 reruns the failures first (failed, or skipped with a GPU present), then the unreached.
  grep -vxF -f "$DEV_BUILD/unreached-$label.txt" "$DEV_BUILD/rerun-$label.txt" >>"$DEV_BUILD/rerun-failed.txt" 2>/dev/null
  cat "$DEV_BUILD/unreached-$label.txt" >>"$DEV_BUILD/rerun-unreached.txt" 2>/dev/null
  python3 "$REPO/scripts/junit-merge.py" "$OUT/tests.xml" "$xml" >>"$OUT/tests.log" 2>&1
  echo "${verdict:-no JUnit report (ctest exit $rc; see tests.log)}"
  [ "${UNREACHED_OK:-0}" = 1 ] || all=(--all "$DEV_BUILD/asked-$label.txt")
  python3 "$REPO/scripts/ctest-junit-summary.py" --ok $gpu_flag "${all[@]}" \
    --cut "$DEV_BUILD/cut-$label.txt" "$xml" \
    "${gpu_tests[@]}" >/dev/null 2>&1
}

# run_bench NAME SECONDS COMMAND...: a benchmark from the build tree, its output appended to
# bench.log, its CSVs (in $BENCH_OUT) gathered into bench-csv.txt. Prints its headline.
run_bench() {
  local name=$1 secs tmp rc head
  secs=$(cap "$2")
  shift 2
  [ "$secs" -ge 5 ] || { echo "$name: not run: the deadline ($(left) s left)"; return 1; }
  tmp=$(mktemp)
  echo "== $(date -u +%H:%M:%S) $name: $* (limit $secs s)" >>"$OUT/bench.log"
  (cd "$DEV_BUILD" && timeout -k 5 "$secs" "$@") 2>&1 | tee "$tmp" >>"$OUT/bench.log"
  rc=${PIPESTATUS[0]}
  head=$(grep -E '^(headline:|SKIP)' "$tmp" | tail -1)
  [ -n "$head" ] || head=$(tail -1 "$tmp")
  rm -f "$tmp"
  for csv in "$BENCH_OUT"/*; do
    if [ -f "$csv" ]; then echo "## $(basename "$csv")" && cat "$csv" && echo; fi
  done >"$OUT/bench-csv.txt.tmp"
  mv -f "$OUT/bench-csv.txt.tmp" "$OUT/bench-csv.txt"
  case $rc in
    0) echo "$name: $head" ;;
    124 | 137) echo "$name: CUT at $secs s: $head"; return 1 ;;
    *) echo "$name: FAILED rc=$rc: $head"; return 1 ;;
  esac
}

# ---- the items: each prints its one-line result, returns non-zero on failure; $1 = seconds ----
item_setup() {
  local secs=$1 pack=$REPO/.deps/prebuilt.tar.xz want have how
  {
    echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(uname -n) call $CALL"
    uname -a
    nvidia-smi 2>&1 || echo "(no nvidia-smi)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit \
      --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    cmake --version 2>&1 | head -1
    env -u LD_LIBRARY_PATH python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU for torch')" 2>&1 | tail -1
    nproc
    df -h /tmp "$REPO" 2>&1
  } >>"$OUT/setup.log" 2>&1
  [ "$STAGED" = 1 ] || { echo "FAILED: staging .deps (setup.log)"; return 1; }
  want=""
  if [ -f "$pack" ]; then
    local info prefix
    info=$(dev_untar "$pack" "" ./PREBUILT.txt 2>>"$OUT/setup.log")
    want=$(sed -n 's/^source_hash //p' <<<"$info")
    prefix=$(sed -n 's/^prefix //p' <<<"$info")
    [ "$prefix" = "$ZS_DEV" ] || want="" # built for another prefix: its CTest paths are wrong here
  fi
  have=$(dev_source_hash)
  if [ -n "$want" ] && [ "$want" = "$have" ]; then
    if [ "$(sed -n 's/^source_hash //p' "$DEV_BUILD/PREBUILT.txt" 2>/dev/null)" = "$have" ]; then
      how="prebuilt tree already unpacked"
    else
      rm -rf "$DEV_BUILD" && mkdir -p "$DEV_BUILD" &&
        dev_untar "$pack" "$DEV_BUILD" >>"$OUT/setup.log" 2>&1 ||
        { echo "FAILED: unpacking $pack (setup.log)"; return 1; }
      how="prebuilt tree unpacked ($(sed -n 's/^commit //p' "$DEV_BUILD/PREBUILT.txt"))"
    fi
  else
    how="built here, arch $ARCH ($([ -f "$pack" ] && echo "the prebuilt tree is stale: sources $have, pack ${want:-for another prefix}" || echo "no prebuilt tree"))"
    [ -f "$DEV_BUILD/PREBUILT.txt" ] && rm -rf "$DEV_BUILD" # never build over a stripped tree
    local t=$SECONDS why
    why=$(timeout -k 5 "$(cap "$secs")" bash -c '. "$1/scripts/device-env.sh" && dev_build "$2" "$3" "$4"' \
      _ "$REPO" "$ARCH" "$JOBS" "$OUT/setup.log") ||
      { echo "FAILED: ${why:-the build did not finish before the deadline}"; return 1; }
    how="$how in $((SECONDS - t)) s"
  fi
  dev_python_here "$DEV_BUILD" >>"$OUT/setup.log" 2>&1
  rm -rf "$BENCH_OUT" && mkdir -p "$BENCH_OUT"
  # Smoke: the probe sees the GPU (or says why not), and two ranks start through the carried mpirun.
  local probe prc smoke src
  probe=$("$DEV_BUILD/tests/zs_cuda_probe" 2>&1 | tail -1)
  prc=$?
  smoke=$(run_ctest smoke "$(scaled 30)" -R '^(comm_mpi_np2|engine_det_np2_stage0)$')
  src=$?
  echo "$how; probe (exit $prc): ${probe:-nothing printed}; smoke: $smoke"
  return $src
}

item_correct() { run_ctest correct "$1" -L gpu-t1; }
item_nccl() { run_ctest nccl "$1" -L gpu-t2 --stop-on-failure; }
item_rest() { UNREACHED_OK=1 run_ctest rest "$1" -L 'gpu-t[34]' -E '^kernels_cuda_d12$'; }

item_speed() { # zshard stage 0 and 3 beside torch eager; torch.compile in what is left
  local secs=$1 t=$SECONDS a b tp=$REPO/bench/train_throughput.sh rc rest
  a=$(run_bench speed $((secs > 30 ? secs - 10 : secs)) bash "$tp" --exe examples/train_gpt2 \
    --steps 12 --runs d12s0,d12s3,torch --torch-modes eager --csv "$BENCH_OUT/speed_d12.csv")
  rc=$?
  rest=$((secs - (SECONDS - t)))
  if [ $rest -ge 20 ]; then
    b=$(run_bench compile "$rest" bash "$tp" --steps 12 --runs torch --torch-modes compile \
      --csv "$BENCH_OUT/speed_d12_compile.csv")
  else
    b="compile: not run ($rest s left)"
  fi
  echo "$a | $b"
  return $rc
}

item_d12() { # kernels at d12 sizes (test, then benchmark), copy rates, d12 stage 3 offloaded
  local secs=$1 t=$SECONDS a b c e ok=0
  a=$(run_ctest d12 $((secs * 2 / 5)) -R '^kernels_cuda_d12$') || ok=1
  b=$(run_bench kernels $((secs / 5)) bench/bench_kernels_cuda \
    --csv "$BENCH_OUT/bench_kernels_cuda.csv") || ok=1
  c=$(run_bench copies $((secs / 6)) bench/bench_copy_rates --mib 256 \
    --threads 8 --csv "$BENCH_OUT/copy_rates.csv") || ok=1
  local rest=$((secs - (SECONDS - t)))
  e=$(run_bench offload "$rest" bash "$REPO/bench/train_throughput.sh" --steps 8 \
    --runs d12s3off --csv "$BENCH_OUT/speed_d12_offload.csv") || ok=1
  echo "kernels_cuda_d12: $a | $b | $c | $e"
  return $ok
}

item_sanitize() {
  local secs=$1 line
  if [ $HAVE_GPU = 0 ]; then echo "not run: no GPU"; return 0; fi
  command -v compute-sanitizer >/dev/null || { echo "not run: compute-sanitizer not found"; return 1; }
  secs=$(cap "$secs")
  # The engine's kernels first (short), then the training kernels; what is not reached is named.
  line=$(timeout -k 5 "$secs" python3 "$REPO/scripts/device-sanitize.py" "$DEV_BUILD" memcheck \
    '^(device_cuda_sq_bins|kernels_mem_cuda|test_kernels_cuda_engine|test_kernels_cuda_whole|test_kernels_cuda|test_kernels_cuda_llama)$' \
    $((secs - 10)) 2>&1 | tee -a "$OUT/sanitize.log" | tail -1)
  echo "${line:-no result (sanitize.log)}"
  case "$line" in *" 0 failed"* | *"not supported"*) return 0 ;; *) return 1 ;; esac
}

item_rerun() { # call 1's failures first (they must pass or say why), then what it did not reach
  local secs=$1 t=$SECONDS a="" b="" ok=0 rest
  if [ -s "$DEV_BUILD/rerun-failed.txt" ]; then
    a=$(NCCL_DEBUG=WARN run_ctest rerun "$secs" -R "^($(sort -u "$DEV_BUILD/rerun-failed.txt" | paste -sd'|'))\$") || ok=1
    a="failed in call 1: $a"
  fi
  rest=$((secs - (SECONDS - t)))
  if [ -s "$DEV_BUILD/rerun-unreached.txt" ] && [ $rest -ge 10 ]; then
    b=$(NCCL_DEBUG=WARN UNREACHED_OK=1 run_ctest reached "$rest" \
      -R "^($(sort -u "$DEV_BUILD/rerun-unreached.txt" | paste -sd'|'))\$") || ok=1
    b="not reached in call 1: $b"
  fi
  echo "${a:-no failures in call 1}${b:+ | $b}"
  return $ok
}

item_d48() {
  run_bench d48 "$1" bash "$REPO/bench/train_throughput.sh" --steps 6 --runs d48 \
    --csv "$BENCH_OUT/speed_d48.csv"
}

item_ckpt() { # d12 with synchronous saves, then asynchronous ones: blocking and steps while writing
  run_bench ckpt "$1" bash "$REPO/bench/ckpt_async_train.sh" --steps 20 --save-every 10 \
    --csv "$BENCH_OUT/ckpt_async_train.csv"
}

# ---- run the items in order (each in a subshell: what must outlive one is set here) ----
STAGED=0
dev_stage "$REPO" >>"$OUT/setup.log" 2>&1 && STAGED=1
dev_env "$REPO"
# Call 1 starts the lists call 2 reruns; call 2 adds its own to them (a third call would see both).
[ "$CALL" = 1 ] && mkdir -p "$DEV_BUILD" && : >"$DEV_BUILD/rerun-failed.txt" && : >"$DEV_BUILD/rerun-unreached.txt"
BANK=0 # seconds earlier items left unused
for i in "${!ITEMS[@]}"; do
  name=${ITEMS[i]}
  l=$(left)
  if [ "$l" -lt 10 ]; then
    STATE[i]="NOT RUN: deadline ($l s left)"
    write_summary
    continue
  fi
  alloc=$((BUDGET[i] + BANK))
  secs=$alloc
  [ "$i" = $((${#ITEMS[@]} - 1)) ] && secs=$l # the last item takes what is left
  [ "$name" = setup ] && secs=$l              # a fallback build may need the whole call
  [ $secs -gt $((l - 5)) ] && secs=$((l - 5))
  STATE[i]="RUNNING since $((SECONDS - T0)) s (limit $secs s)"
  write_summary
  t=$SECONDS
  if res=$("item_$name" "$secs"); then st=DONE; else st=FAILED; OK=0; fi
  took=$((SECONDS - t))
  STATE[i]="$st ($took s) $(printf '%s' "$res" | tr -s '\n' ' ' | cut -c1-700)"
  BANK=$((alloc - took > 0 ? alloc - took : 0))
  [ "$name" = setup ] && dev_nccl_first "$DEV_BUILD" # the NCCL the tree was linked with, first
  write_summary
  if [ "$name" = setup ] && [ $st = FAILED ] && [ ! -x "$DEV_BUILD/tests/zs_cuda_probe" ]; then
    for j in "${!ITEMS[@]}"; do [ "$j" -gt "$i" ] && STATE[j]="NOT RUN: no build"; done
    write_summary
    break
  fi
done
n_out=$(find "$OUT" -type f | wc -l)
[ "$n_out" -le 8 ] || echo "WARNING: $n_out files in $OUT; the device returns 8" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
[ $OK = 1 ]
