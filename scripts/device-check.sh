#!/usr/bin/env bash
# The GPU machine's check: build zshard with CUDA against the dependencies carried in .deps/root
# (made here by scripts/fetch-device-deps.sh: the device machine has nvcc, CMake and the CUDA
# libraries, but no internet and no Debian packages), run every ctest test (the GPU tests for
# real, the CPU and MPI ones too) and the GPU benchmarks listed in bench/device-benchmarks.txt.
# Logs go to $OUT (default ./out); a short table comes last. Exit status: 0 when the build and all
# tests passed.
#
#   scripts/device-check.sh [--no-bench] [--no-tests] [--ctest-args "-L cuda"] [--jobs N]
#
# Works without a GPU too (the GPU tests and benchmarks then print "SKIP: no CUDA device").
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BUILD=$REPO/build-device
RUN_BENCH=1 RUN_TESTS=1 CTEST_ARGS="" JOBS=$(nproc 2>/dev/null || echo 4)
while [ $# -gt 0 ]; do
  case "$1" in
  --no-bench) RUN_BENCH=0 ;;
  --no-tests) RUN_TESTS=0 ;;
  --ctest-args) CTEST_ARGS=$2; shift ;;
  --jobs) JOBS=$2; shift ;;
  *) echo "usage: $0 [--no-bench] [--no-tests] [--ctest-args ARGS] [--jobs N]" >&2; exit 2 ;;
  esac
  shift
done
OUT=${OUT:-$REPO/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export OUT

# ---- the carried dependencies ----
ROOT=$REPO/.deps/root
A=$ROOT/usr/lib/x86_64-linux-gnu
if [ ! -d "$A" ]; then
  echo "device-check: $ROOT is missing: run scripts/fetch-device-deps.sh on the build machine" \
    "and carry .deps" >&2
  exit 1
fi
for gz in "$A"/openblas-pthread/*.so.gz; do # stored compressed by fetch-device-deps.sh
  [ -e "$gz" ] && [ ! -e "${gz%.gz}" ] && gzip -dc "$gz" >"${gz%.gz}"
done
export PATH=$ROOT/usr/bin:/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$A:$A/openmpi/lib:$A/openblas-pthread:$A/pmix2/lib:$ROOT/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$A/pkgconfig:$ROOT/usr/share/pkgconfig # .pc paths are ${pcfiledir}-relative
export CMAKE_PREFIX_PATH=$ROOT/usr
export OPAL_PREFIX=$ROOT/usr            # Open MPI: relocated install (wrappers, components, help)
export PMIX_INSTALL_PREFIX=$A/pmix2      # PMIx: its components
export HWLOC_PLUGINS_PATH=$A/hwloc
command -v ssh >/dev/null || export OMPI_MCA_plm_rsh_agent=false # local launches only

# ---- configure, build ----
STEPS=()
step() { STEPS+=("$(printf '%-10s %s' "$1" "$2")"); }
{
  echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') $(uname -n)"
  nvidia-smi -L 2>&1 || echo "(no nvidia-smi)"
  nvcc --version | tail -1
  cmake --version | head -1
} >"$OUT/build.log" 2>&1
cmake -S "$REPO" -B "$BUILD" -DZS_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=native \
  -DPKG_CONFIG_EXECUTABLE="$ROOT/usr/bin/pkgconf" -DMPI_C_COMPILER="$ROOT/usr/bin/mpicc" \
  -DMPIEXEC_EXECUTABLE="$ROOT/usr/bin/mpirun" >>"$OUT/build.log" 2>&1
CONF=$?
BUILT=1
[ $CONF -eq 0 ] || BUILT=0
if [ $CONF -eq 0 ]; then
  step configure ok
  # Keep going past a broken target: the tests that did build still run (and tell more).
  KEEP=(-k)
  [ -f "$BUILD/build.ninja" ] && KEEP=(-k 0)
  cmake --build "$BUILD" -j"$JOBS" -- "${KEEP[@]}" >>"$OUT/build.log" 2>&1 || BUILT=0
  if [ $BUILT -eq 1 ]; then
    step build ok
  else
    BROKEN=$(grep -oE '\*\*\* \[[^]]*/build.make:[0-9]+: [^]]+\]' "$OUT/build.log" |
      sed -E 's/.*: ([^]]+)\]/\1/' | xargs -r -n1 basename | sort -u | tr '\n' ' ')
    step build "FAILED: ${BROKEN:-see build.log}"
  fi
else
  step configure "FAILED (see build.log)"
fi
CONFIGURED=$((CONF == 0))

# ---- tests ----
TESTS_OK=1
if [ $CONFIGURED -eq 1 ] && [ $RUN_TESTS -eq 1 ]; then
  # shellcheck disable=SC2086
  (cd "$BUILD" && ctest --output-on-failure --output-junit "$OUT/ctest.xml" -j"$JOBS" $CTEST_ARGS) \
    >"$OUT/ctest.log" 2>&1 || TESTS_OK=0
  SUMMARY=$(grep -E 'tests passed|No tests were found' "$OUT/ctest.log" | tail -1)
  FAILED=$(sed -n '/The following tests FAILED/,$p' "$OUT/ctest.log" | grep -E '^\s+[0-9]+ - ' |
    sed -E 's/^\s+[0-9]+ - ([^ ]+).*/\1/' | tr '\n' ' ')
  SKIPS=$(grep -c 'SKIP: no CUDA device' "$OUT/ctest.log" || true)
  step tests "${SUMMARY:-no ctest summary (see ctest.log)}${FAILED:+ | failed: $FAILED}"
  [ "$SKIPS" -gt 0 ] && step "" "($SKIPS GPU test(s) skipped: no CUDA device; see ctest.log)"
elif [ $RUN_TESTS -eq 1 ]; then
  TESTS_OK=0
  step tests "not run (configure failed)"
fi

# ---- benchmarks: one command per line of bench/device-benchmarks.txt, run in the build dir ----
HEADLINES=()
if [ $CONFIGURED -eq 1 ] && [ $RUN_BENCH -eq 1 ] && [ -f "$REPO/bench/device-benchmarks.txt" ]; then
  : >"$OUT/bench.log"
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in '' | '#'*) continue ;; esac
    echo "== $line" >>"$OUT/bench.log"
    tmp=$(mktemp)
    (cd "$BUILD" && timeout 900 bash -c "$line") >"$tmp" 2>&1
    rc=$?
    cat "$tmp" >>"$OUT/bench.log"
    head=$(grep -E '^(headline:|SKIP:)' "$tmp" | tail -1)
    [ -n "$head" ] || head=$(tail -1 "$tmp")
    [ $rc -eq 0 ] || head="FAILED rc=$rc: $head"
    HEADLINES+=("$(printf '%-10s %.70s\n%-10s   %s' bench "$line" "" "$head")")
    rm -f "$tmp"
  done <"$REPO/bench/device-benchmarks.txt"
fi

# ---- the table, last ----
GPU=$(nvidia-smi -L 2>/dev/null | head -1)
{
  echo
  echo "== device-check summary (${GPU:-no GPU})"
  for s in "${STEPS[@]}"; do echo "$s"; done
  for h in "${HEADLINES[@]}"; do echo "$h"; done
  echo "logs       $OUT"
} | tee "$OUT/summary.txt"
[ $BUILT -eq 1 ] && [ $TESTS_OK -eq 1 ]
