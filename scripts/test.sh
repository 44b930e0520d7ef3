#!/usr/bin/env bash
# Builds zshard and runs every test: the normal build (CUDA code compiled when nvcc is there; GPU
# tests skip cleanly without a GPU and are counted as skipped), then the CPU suite again under
# AddressSanitizer + UBSan, then the GPU machine's rehearsal (scripts/device-rehearsal.sh: the
# CUDA build and every test under that machine's constraints, when this machine can make the
# namespaces and has the CUDA toolkit), then a Release build (-O3 warnings) that is only compiled.
# Warnings are errors here (ZS_WERROR=ON).
#
# Usage: scripts/test.sh [--fast] [--asan-only] [--no-rehearsal] [-- extra ctest args]
#   --fast          skip the ASan pass, the rehearsal and the Release build
#   --asan-only     only the ASan pass
#   --no-rehearsal  skip the device rehearsal
# Environment:
#   BUILD_DIR       normal build folder (default build)
#   ASAN_BUILD_DIR  sanitizer build folder (default build-asan, or ${BUILD_DIR}-asan when BUILD_DIR is set)
#   RELEASE_BUILD_DIR  Release build folder (default build-release, or ${BUILD_DIR}-release)
#   CTEST_JOBS      parallel ctest jobs (default 2; multi-rank tests reserve PROCESSORS = ranks)
#   BUILD_JOBS      parallel compile jobs (default: number of cores)
#   SKIP_DEPS=1     do not call scripts/install-deps.sh
# Prints "N passed, M failed, K skipped" last (all passes summed; a failed build counts as one
# failure, the rehearsal as one test) and exits non-zero when anything failed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

run_normal=1
run_asan=1
run_release=1
run_rehearsal=1
ctest_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fast)
      run_asan=0
      run_release=0
      run_rehearsal=0
      ;;
    --asan-only)
      run_normal=0
      run_release=0
      run_rehearsal=0
      ;;
    --no-rehearsal)
      run_rehearsal=0
      ;;
    --)
      shift
      ctest_extra=("$@")
      break
      ;;
    -h | --help)
      sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "test.sh: unknown option '$1' (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done

build_dir=${BUILD_DIR:-build}
if [ -n "${BUILD_DIR:-}" ]; then
  asan_dir=${ASAN_BUILD_DIR:-${BUILD_DIR%/}-asan}
  release_dir=${RELEASE_BUILD_DIR:-${BUILD_DIR%/}-release}
else
  asan_dir=${ASAN_BUILD_DIR:-build-asan}
  release_dir=${RELEASE_BUILD_DIR:-build-release}
fi
ctest_jobs=${CTEST_JOBS:-2}
build_jobs=${BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}

# mpirun as root, shared memory inside containers, and no oversubscription refusals on small hosts.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  "$repo/scripts/install-deps.sh"
fi

total_pass=0
total_fail=0
total_skip=0
ctest_env=()  # extra environment of the ctest run (the sanitizer options)
ctest_pass=() # extra ctest arguments of one pass (the ASan pass leaves the sweeps out)
notes=()
start_all=$SECONDS

# Configures and builds folder $1 with the extra cmake arguments that follow. Keeps going past
# errors so that every test that can be built is built; returns non-zero when anything failed.
build() {
  local dir=$1
  shift
  echo "== configure $dir: $*"
  if ! cmake -S "$repo" -B "$dir" "$@"; then
    return 1
  fi
  local keep=(-k)
  if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt" 2>/dev/null; then
    keep=(-k 0)
  fi
  echo "== build $dir (-j $build_jobs)"
  cmake --build "$dir" -j "$build_jobs" -- "${keep[@]}"
}

# Runs ctest in folder $1 (label $2 for the summary) and adds its counts to the totals.
run_ctest() {
  local dir=$1 label=$2 log rc=0 line passed failed total skipped
  log=$(mktemp)
  echo "== ctest $dir (-j $ctest_jobs)"
  (cd "$dir" && env "${ctest_env[@]}" ctest --output-on-failure -j "$ctest_jobs" "${ctest_pass[@]}" "${ctest_extra[@]}") 2>&1 | tee "$log" ||
    rc=$?
  # "95% tests passed, 1 tests failed out of 20"
  line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [ -n "$line" ]; then
    failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
    total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
    # Skipped tests (SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION: the GPU tests here) are listed
    # under "The following tests did not run:" with "(Skipped)".
    skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$log" || true)
    passed=$((total - failed - skipped))
  elif grep -q 'No tests were found' "$log"; then
    passed=0
    failed=0
    skipped=0
  else
    passed=0
    skipped=0
    failed=1
    notes+=("$label: ctest did not report a summary")
  fi
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
    notes+=("$label: ctest exited $rc")
  fi
  total_pass=$((total_pass + passed))
  total_fail=$((total_fail + failed))
  total_skip=$((total_skip + skipped))
  notes+=("$label: $passed passed, $failed failed, $skipped skipped")
  rm -f "$log"
}

# One pass: build folder $1 labelled $2 with cmake args $3..., then ctest in it.
pass() {
  local dir=$1 label=$2 t0=$SECONDS
  shift 2
  if ! build "$dir" "$@"; then
    total_fail=$((total_fail + 1))
    notes+=("$label: BUILD FAILED (tests that did build still run)")
  fi
  if [ -f "$dir/CTestTestfile.cmake" ]; then
    run_ctest "$dir" "$label"
  fi
  notes+=("$label: $((SECONDS - t0)) s")
}

if [ "$run_normal" = 1 ]; then
  pass "$build_dir" normal -DZS_CUDA=AUTO -DZS_WERROR=ON
fi

if [ "$run_asan" = 1 ]; then
  # CUDA off: sanitizers and nvcc do not mix; the CPU suite is what ASan must cover. OpenMPI's
  # own allocations at init are not ours: tests/lsan.supp names them.
  ctest_env=(EQUIV_ONE_SPLIT=1 ZS_PROTOCOL_SEQS=50
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:fast_unwind_on_malloc=0
    "LSAN_OPTIONS=suppressions=$repo/tests/lsan.supp:print_suppressions=0"
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
  # A sweep's other points (label "sweep", tests/CMakeLists.txt) reach the code its representatives
  # reach: the normal pass runs them all, the ASan pass the representatives, one split of each
  # equivalence test (EQUIV_ONE_SPLIT, tests/engine/engine_equiv.sh; 3 of gpt2_determinism's 11
  # runs), 50 of the protocol test's
  # 150 sequences, and not the proofs against Python (label "reference") nor the fuzz target
  # (label "fuzz": it builds itself with clang's ASan and UBSan in either pass).
  ctest_pass=(-LE "sweep|reference|fuzz")
  pass "$asan_dir" asan -DZS_SANITIZE=ON -DZS_CUDA=OFF -DZS_WERROR=ON
  ctest_pass=()
fi

if [ "$run_rehearsal" = 1 ]; then
  # The GPU machine rehearsed: CUDA build + every test with only the carried dependencies, no
  # network (scripts/device-rehearsal.sh). It needs the CUDA toolkit and namespaces.
  t0=$SECONDS
  if [ ! -x /usr/local/cuda/bin/nvcc ]; then
    notes+=("rehearsal: NOT RUN: no CUDA toolkit in /usr/local/cuda (nothing to rehearse)")
  else
    log=$(mktemp)
    rc=0
    # Beside the build folder; inside the checkout only where git ignores it (the rehearsal
    # measures the tree that would travel: an unignored build folder would count).
    case $build_dir in
      /*) rdir=${build_dir%/}-rehearsal ;;
      *) rdir=$repo/${build_dir%/}-rehearsal ;;
    esac
    if [[ $rdir == "$repo"/* ]] && ! git -C "$repo" check-ignore -q "${rdir#"$repo"/}/" 2>/dev/null; then
      rdir=$repo/build-rehearsal
    fi
    REHEARSAL_BUILD_DIR="$rdir" OUT="$rdir/out" \
      bash "$repo/scripts/device-rehearsal.sh" -- --jobs "$build_jobs" 2>&1 | tee "$log" || rc=$?
    last=$(grep '^device-rehearsal: ' "$log" | tail -n 1)
    case $rc in
      0) total_pass=$((total_pass + 1)) ;;
      77) total_skip=$((total_skip + 1)) ;;
      *) total_fail=$((total_fail + 1)) ;;
    esac
    notes+=("rehearsal: ${last:-device-rehearsal.sh exited $rc} ($((SECONDS - t0)) s)")
    rm -f "$log"
  fi
fi

if [ "$run_release" = 1 ]; then
  # Compiled only: -O3 sees warnings (e.g. -Wmaybe-uninitialized) that -O2 -g does not. The CUDA
  # parts are compiled by the normal pass already.
  ctest_env=()
  t0=$SECONDS
  if build "$release_dir" -DCMAKE_BUILD_TYPE=Release -DZS_CUDA=OFF -DZS_WERROR=ON; then
    total_pass=$((total_pass + 1))
    notes+=("release: build OK")
  else
    total_fail=$((total_fail + 1))
    notes+=("release: BUILD FAILED")
  fi
  notes+=("release: $((SECONDS - t0)) s")
fi

echo
echo "== summary ($((SECONDS - start_all)) s)"
printf '   %s\n' "${notes[@]}"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
