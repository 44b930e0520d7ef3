# Shell fixtures the example tests share (tests/gpt2/*.sh, tests/llama/*.sh): source it, then
# call what the test needs. Each function either returns with its work done or ends the test
# with ctest's codes: 77 = skipped (SKIP_RETURN_CODE), 0 = a GPU test without a GPU, 1 = failed.

# zs_need_python SOURCE_DIR torch|transformers: PY = a Python with that package
# (scripts/ensure-<package>.sh installs it when missing); exits 77 when none can be had.
zs_need_python() {
  local src=$1 pkg=$2 name=$2
  [ "$pkg" = torch ] && name=PyTorch
  PY=$(bash "$src/scripts/ensure-$pkg.sh")
  case $? in
    0) ;;
    77) echo "SKIP: $name is not available and no package registry can be reached"; exit 77 ;;
    *) echo "FAIL: $name is missing and installing it failed"; exit 1 ;;
  esac
}

# zs_need_gpu CUDA_PROBE: returns when the probe (tests/cuda_probe.c) sees a CUDA device; exits 0
# with "SKIP: no CUDA device" without one (GPU tests pass where there is no GPU, tests/gpu_tests.md).
zs_need_gpu() {
  "$1" >/dev/null 2>&1
  case $? in
    0) ;;
    77) echo "SKIP: no CUDA device"; exit 0 ;;
    *) echo "FAIL: the CUDA probe $1 failed"; exit 1 ;;
  esac
}

# zs_workdir: W = a fresh temporary directory, removed when the test exits.
zs_workdir() {
  W=$(mktemp -d)
  trap 'rm -rf "$W"' EXIT
}

# zs_expect_refusal WHAT PROGRAM LOG COMMAND...: COMMAND must fail with an "error:" line in its
# output (kept in LOG), not succeed and not crash silently; prints ok/FAIL and counts it in the
# caller's pass / fail.
zs_expect_refusal() {
  local what=$1 prog=$2 log=$3
  shift 3
  if "$@" >"$log" 2>&1; then
    echo "FAIL $what: $prog succeeded"; fail=$((fail + 1))
  elif grep -q "error:" "$log"; then
    echo "ok   $what refused: $(grep -m1 error: "$log")"; pass=$((pass + 1))
  else
    echo "FAIL $what: no error message"; cat "$log"; fail=$((fail + 1))
  fi
}
