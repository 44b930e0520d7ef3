#!/usr/bin/env bash
# The GPU machine's check. Each call builds (incrementally) and then runs the parts it names, and
# ends with its own short table:
#
#   scripts/device-check.sh tests      # build with CUDA, every ctest test, then compute-sanitizer
#                                      # (memcheck, racecheck, synccheck) as far as the budget goes
#   scripts/device-check.sh bench      # the benchmarks of bench/device-benchmarks.txt
#   scripts/device-check.sh sanitize bench   # second call when `tests` ran out of budget first
#
# It builds against the dependencies carried in .deps/root (made on the build machine by
# scripts/fetch-device-deps.sh: the GPU machine has nvcc, CMake, Python and the CUDA libraries but
# no internet and no Debian packages). .deps is only read: what must be unpacked is unpacked into
# the build folder, so the carried tree never grows. Logs go to $OUT (default ./out), at most 7
# files (the device returns 8): build.log, ctest.log, ctest.xml, sanitize.log, bench.log,
# bench-csv.txt (every benchmark's CSV, each after a "## name" line), summary.txt.
#
# Time plan on the GPU machine (16 cores; the device allows 10 minutes a call, 30 a session).
# Every call keeps to --budget (default 540 s): ctest gets a stop time that leaves room for the
# table, each sanitizer run and benchmark is started only with time left and limited to it, and
# a part that does not fit says "not run: budget" (run it in the next call).
#   call 1, tests: configure + build 3-4 min (one architecture: native, Ninja); ctest -j 8 for
#          the rest of the budget: the ~60 GPU tests run one at a time under the "gpu" lock and
#          start first (COST), the CPU tests fill the other slots. tests/gpu_tests.md estimates
#          7 min for the GPU chain, so the budget may stop it: ctest's --stop-time ends it
#          cleanly, and the tests that failed or were not reached (and GPU tests that skipped
#          with a GPU present) are written to $BUILD/rerun.txt.
#   call 2, tests --rerun sanitize bench: only the tests of rerun.txt, then compute-sanitizer
#          (1-3 min), then the benchmarks (<= 5 min) as far as the budget goes; build 0 s while
#          the machine is warm, else 3-4 min. Another `sanitize bench` call takes what is left.
#   Call 2 right after call 1 finds the machine warm (one start, 1-2 min): 2 x 9 + 2 <= 20
#   device-minutes in all. A cold second start adds 1-2 min and a full build (3-4 min, taken out
#   of call 2's budget).
# Carry .deps in both calls (device `carry: [".deps"]`).
#
# Options:
#   --cuda-arch A    CMAKE_CUDA_ARCHITECTURES (default: native when nvidia-smi sees a GPU, else
#                    90-real, the H100's, so that a machine without a GPU still builds)
#   --ctest-args S   extra ctest arguments (e.g. "-L gpu"); words split on blanks, no quoting
#   --rerun          `tests` runs only the tests $BUILD/rerun.txt names (the previous `tests`
#                    call's failed, not reached and wrongly skipped ones); nothing to do if empty
#   --jobs N         build and ctest parallelism (default: cores, ctest at most 8)
#   --budget S       seconds this call may take in all (default 540)
#   --no-sanitize    `tests` without the compute-sanitizer passes
# Without a GPU everything still runs: GPU tests must skip (one that runs anyway fails the check:
# its skip detection is broken), the sanitizer passes are "not run: no GPU", benchmarks print
# SKIP. Exit status: 0 when the build and every part run passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
BUILD=${DEVICE_BUILD_DIR:-$REPO/build-device}
PARTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    tests | sanitize | bench) PARTS+=("$1") ;;
    -h | --help)
      sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) break ;;
  esac
  shift
done
if [ ${#PARTS[@]} -eq 0 ]; then
  echo "usage: $0 tests|sanitize|bench... [--cuda-arch A] [--ctest-args S] [--jobs N]" \
    "[--budget S] [--no-sanitize]" >&2
  exit 2
fi
MODE="${PARTS[*]}"
has() { [[ " $MODE " == *" $1 "* ]]; }
HAVE_GPU=0 # nvidia-smi, or the driver's device node where nvidia-smi is not on the PATH
{ nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || ls /dev/nvidia[0-9]* >/dev/null 2>&1; } && HAVE_GPU=1
ARCH=$([ $HAVE_GPU = 1 ] && echo native || echo 90-real)
CTEST_ARGS="" SANITIZE=1 JOBS=$(nproc 2>/dev/null || echo 4) BUDGET=540 RERUN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda-arch) ARCH=$2; shift ;;
    --ctest-args) CTEST_ARGS=$2; shift ;;
    --jobs) JOBS=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    --no-sanitize) SANITIZE=0 ;;
    --rerun) RERUN=1 ;;
    *) echo "device-check: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
CTEST_JOBS=$((JOBS > 8 ? 8 : JOBS))
has tests && [ $SANITIZE = 1 ] && ! has sanitize && PARTS+=(sanitize) && MODE="${PARTS[*]}"
left() { echo $((BUDGET - SECONDS)); } # seconds of this call's budget still left
OUT=${OUT:-$REPO/out}
mkdir -p "$OUT" "$BUILD"
OUT=$(cd "$OUT" && pwd)
export OUT

# ---- the carried dependencies, staged into the build folder ----
if [ ! -d "$REPO/.deps/root/usr/lib/x86_64-linux-gnu" ]; then
  echo "device-check: $REPO/.deps/root is missing: run scripts/fetch-device-deps.sh on the build" \
    "machine and carry .deps" >&2
  exit 1
fi
ROOT=$BUILD/deps-root
# names and sizes, not times: a carried copy may get new mtimes, and a fresh deps-root would make
# every object that includes a carried header stale (a full rebuild in call 2)
stamp=$(find "$REPO/.deps/root" -printf '%P %s\n' | sort | cksum | cut -d' ' -f1)
if [ "$(cat "$ROOT.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$ROOT" && cp -a "$REPO/.deps/root" "$ROOT" || exit 1
  for gz in "$ROOT"/usr/lib/x86_64-linux-gnu/openblas-pthread/*.so.gz; do # gzipped to travel
    [ -e "$gz" ] && { gzip -dc "$gz" >"${gz%.gz}" && rm -f "$gz" || exit 1; }
  done
  echo "$stamp" >"$ROOT.stamp"
fi
A=$ROOT/usr/lib/x86_64-linux-gnu
# NCCL from the Python wheel (nvidia-nccl-cu13) when the toolkit has none: CMake finds it too
# (cmake/ZsNccl.cmake) and puts it in the RUNPATH; LD_LIBRARY_PATH is the belt to those braces.
NCCL_LIBDIRS=$(python3 -c "import os, sys
for p in sys.path:
    d = os.path.join(p or '.', 'nvidia', 'nccl', 'lib')
    if os.path.isdir(d): print(os.path.abspath(d))" 2>/dev/null | tr '\n' ':')
export PATH=$ROOT/usr/bin:/usr/local/cuda/bin:$PATH
# The carried libraries first (libnl-3 lives in lib/, not usr/lib/); the CUDA toolkit's last, so
# that an NCCL beside it never shadows the one CMake linked (put in front after configure).
# shellcheck source=scripts/device-libdirs.sh
. "$REPO/scripts/device-libdirs.sh" # the folders fetch-device-deps.sh checked the libraries against
CARRIED_LIBS=""
for d in "${DEVICE_LIBDIRS[@]}"; do CARRIED_LIBS+="$ROOT/$d:"; done
export LD_LIBRARY_PATH=${CARRIED_LIBS}${NCCL_LIBDIRS}/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$A/pkgconfig:$ROOT/usr/share/pkgconfig # .pc paths are ${pcfiledir}-relative
export CMAKE_PREFIX_PATH=$ROOT/usr
export OPAL_PREFIX=$ROOT/usr            # Open MPI: relocated install (wrappers, components, help)
export PMIX_INSTALL_PREFIX=$A/pmix2      # PMIx: its components
export PMIX_MCA_mca_base_component_path=$A/pmix2/lib/pmix # also for singletons (no mpirun)
export HWLOC_PLUGINS_PATH=$A/hwloc
export OMPI_MCA_mca_base_component_show_load_errors=0
command -v ssh >/dev/null || export OMPI_MCA_plm_rsh_agent=false # local launches only

STEPS=()
step() { STEPS+=("$(printf '%-10s %s' "$1" "$2")"); }
table() { # the summary, last
  local gpu s
  gpu=$(nvidia-smi -L 2>/dev/null | head -1)
  {
    echo
    echo "== device-check $MODE summary (${gpu:-no GPU}; arch $ARCH; $((SECONDS / 60)) min $((SECONDS % 60)) s)"
    for s in "${STEPS[@]}"; do echo "$s"; done
    echo "logs       $OUT"
  } | tee "$OUT/summary.txt"
}

# ---- configure, build ----
{
  echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(uname -n) mode $MODE arch $ARCH"
  nvidia-smi -L 2>&1 || echo "(no nvidia-smi)"
  nvcc --version | tail -1
  cmake --version | head -1
} >>"$OUT/build.log" 2>&1
t0=$SECONDS
BUILT=0
GEN=() # Ninja where there is one (the GPU machine has ninja and may lack make), for a new folder
[ ! -f "$BUILD/CMakeCache.txt" ] && command -v ninja >/dev/null && GEN=(-G Ninja)
if cmake "${GEN[@]}" -S "$REPO" -B "$BUILD" -DZS_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DPKG_CONFIG_EXECUTABLE="$ROOT/usr/bin/pkgconf" \
  -DMPI_C_COMPILER="$ROOT/usr/bin/mpicc" -DMPIEXEC_EXECUTABLE="$ROOT/usr/bin/mpirun" \
  >>"$OUT/build.log" 2>&1; then
  nccl_lib=$(sed -n 's/^ZS_NCCL_LIB:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  [ -n "$nccl_lib" ] && export LD_LIBRARY_PATH=$(dirname "$nccl_lib"):$LD_LIBRARY_PATH
  KEEP=(-k) # keep going past a broken target: the tests that did build still run
  [ -f "$BUILD/build.ninja" ] && KEEP=(-k 0)
  if cmake --build "$BUILD" -j"$JOBS" -- "${KEEP[@]}" >>"$OUT/build.log" 2>&1; then
    BUILT=1
    step build "ok ($((SECONDS - t0)) s)"
  else
    BROKEN=$(grep -oE '\*\*\* \[[^]]*/build.make:[0-9]+: [^]]+\]' "$OUT/build.log" |
      sed -E 's/.*: ([^]]+)\]/\1/' | xargs -r -n1 basename | sort -u | tr '\n' ' ')
    step build "FAILED: ${BROKEN:-see build.log}"
  fi
  CONFIGURED=1
else
  CONFIGURED=0
  step build "configure FAILED: $(grep -m1 -A2 'CMake Error' "$OUT/build.log" | tr -s ' \n' ' ' | cut -c1-200)"
fi

OK=$BUILT
if has tests && [ $RERUN = 1 ]; then
  if [ ! -s "$BUILD/rerun.txt" ]; then
    step tests "--rerun: nothing to run again ($BUILD/rerun.txt is empty or missing)"
    PARTS=("${PARTS[@]/tests/}") && MODE="${PARTS[*]}"
  else # test names are words: ^(a|b|c)$
    CTEST_ARGS="$CTEST_ARGS -R ^($(paste -sd'|' "$BUILD/rerun.txt"))\$"
  fi
fi
if has tests; then
  if [ $CONFIGURED = 1 ] && [ "$(left)" -gt 60 ]; then
    t0=$SECONDS
    rm -f "$OUT/ctest.xml"
    # ctest stops every test at this time of day (and reports it as a timeout), leaving 30 s of
    # the budget for the report and the table; tests not started by then are not run.
    stop=$(date -d "@$(($(date +%s) + $(left) - 30))" +%H:%M:%S)
    # shellcheck disable=SC2086
    (cd "$BUILD" && ctest --output-on-failure --output-junit "$OUT/ctest.xml" -j"$CTEST_JOBS" \
      --stop-time "$stop" $CTEST_ARGS) >"$OUT/ctest.log" 2>&1 || OK=0
    # shellcheck disable=SC2086 # CTEST_ARGS is a list of words
    mapfile -t GPU_TESTS < <(cd "$BUILD" && ctest -N -L gpu $CTEST_ARGS |
      sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p')
    # shellcheck disable=SC2086
    (cd "$BUILD" && ctest -N $CTEST_ARGS | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p') >"$BUILD/asked.txt"
    # Without a GPU a GPU test that does not skip is a failure; with one, a GPU test that skips.
    NO_GPU=(--all "$BUILD/asked.txt")
    [ $HAVE_GPU = 0 ] && NO_GPU+=(--no-gpu) || NO_GPU+=(--gpu)
    label="tests"
    while IFS= read -r line; do
      step "$label" "$line"
      label=""
    done < <(python3 "$REPO/scripts/ctest-junit-summary.py" "${NO_GPU[@]}" \
      --rerun "$BUILD/rerun.txt" "$OUT/ctest.xml" \
      "${GPU_TESTS[@]}" || echo "FAILED: no JUnit report (see ctest.log)")
    python3 "$REPO/scripts/ctest-junit-summary.py" --ok "${NO_GPU[@]}" "$OUT/ctest.xml" \
      "${GPU_TESTS[@]}" || OK=0
    step "" "ctest took $((SECONDS - t0)) s (stop time $stop); to run again: $(wc -l <"$BUILD/rerun.txt" 2>/dev/null || echo '?') tests (--rerun)"
  else
    OK=0
    step tests "not run ($([ $CONFIGURED = 1 ] && echo "budget: $(left) s left" || echo "configure failed"))"
  fi
fi

# ---- compute-sanitizer: memcheck over the single-process GPU tests, racecheck and synccheck over
# the engine's (multi-rank NCCL over sockets is too slow under it); each run within the budget ----
if has sanitize && [ $BUILT = 1 ]; then
  if [ $HAVE_GPU = 0 ]; then
    step sanitize "not run: no GPU"
  elif ! command -v compute-sanitizer >/dev/null; then
    step sanitize "not run: compute-sanitizer not found"
    OK=0
  else
    for tool in memcheck racecheck synccheck; do
      if [ "$(left)" -lt 60 ]; then
        step "$tool" "not run: budget ($(left) s left): run \`device-check.sh sanitize\` next"
        OK=0
        continue
      fi
      filter=$([ $tool = memcheck ] && echo '' || echo '^engine_cuda')
      line=$(python3 "$REPO/scripts/device-sanitize.py" "$BUILD" "$tool" "$filter" \
        $(($(left) - 30)) 2>&1 | tee -a "$OUT/sanitize.log" | tail -1)
      step "$tool" "$line"
      case "$line" in
        *"not reached"*) OK=0 ;;
        *" 0 failed"*) ;; # "stopped: the sanitizer does not support this device": shown, not failed
        *) OK=0 ;;
      esac
    done
  fi
fi

# ---- benchmarks: one command per line of bench/device-benchmarks.txt, run in the build folder ----
if has bench && [ $BUILT = 1 ]; then
  : >"$OUT/bench.log"
  # Benchmarks write their CSVs here ($BENCH_OUT); they reach $OUT as one file, bench-csv.txt.
  export BENCH_OUT=$BUILD/bench-out
  rm -rf "$BENCH_OUT" && mkdir -p "$BENCH_OUT"
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in '' | '#'*) continue ;; esac
    if [ "$(left)" -lt 60 ]; then
      step bench "not run: budget ($(left) s left): $(printf '%.60s' "$line")"
      OK=0
      continue
    fi
    echo "== $line" >>"$OUT/bench.log"
    tmp=$(mktemp)
    t0=$SECONDS
    (cd "$BUILD" && timeout $(($(left) - 30)) bash -c "$line") >"$tmp" 2>&1
    rc=$?
    cat "$tmp" >>"$OUT/bench.log"
    head=$(grep -E '^(headline:|SKIP)' "$tmp" | tail -1)
    [ -n "$head" ] || head=$(tail -1 "$tmp")
    [ $rc -eq 0 ] || { head="FAILED rc=$rc: $head"; OK=0; }
    step bench "$(printf '%.70s (%d s)' "$line" $((SECONDS - t0)))"
    step "" "  $head"
    rm -f "$tmp"
  done <"$REPO/bench/device-benchmarks.txt"
  for csv in "$BENCH_OUT"/*; do
    [ -f "$csv" ] && { echo "## $(basename "$csv")" && cat "$csv" && echo; }
  done >"$OUT/bench-csv.txt"
fi

# The device returns at most 8 files from $OUT: say so when a call leaves more.
n_out=$(find "$OUT" -type f | wc -l)
[ "$n_out" -le 8 ] || step out "WARNING: $n_out files in $OUT; the device returns 8"

table
[ "$OK" = 1 ]
