#!/usr/bin/env bash
# Rehearses the GPU session here: the prepared calls of scripts/device-first.sh under the GPU
# machine's constraints, so that a lent task spends its 15 device-minutes on the GPU, not on
# packaging. It also leaves the tree the device runs, .deps/prebuilt.tar.xz, proven.
#
#   scripts/device-rehearsal.sh [--keep] [-- device-first options]
#
# The GPU machine has the CUDA toolkit, a C toolchain, CMake and Python, NCCL possibly only as the
# Python wheel (nvidia-nccl-cu13: libnccl.so.2 and nccl.h under site-packages/nvidia/nccl), no
# network and no Debian packages: it runs what scripts/fetch-device-deps.sh and
# scripts/device-prebuild.sh carried in .deps. Here, in a mount namespace and a network namespace of
# their own (unshare -m -n):
#   - every file of the Debian packages that scripts/install-deps.sh installs, and of the run-time
#     libraries they pulled in (scripts/device-image-hide.py), is hidden by overlayfs whiteouts
#     over /usr and /etc; so are the toolkit's NCCL library and headers, which are offered as a
#     wheel-shaped folder on PYTHONPATH instead;
#   - there is no network but loopback, and the environment is a clean one;
#   - the working tree that would travel (files git tracks or does not ignore, plus .deps) must
#     be at most 64 MiB before and after the run.
# Inside: device-first.sh --plan (the whole session's planned device time, at most 14 minutes),
# device-prebuild.sh (the CUDA build with the carried dependencies only: also the device's
# fallback build), then, from the unpacked pack as on a fresh machine, call 1 and call 2 of
# device-first.sh, then call 1 killed with SIGKILL (its whole process group, from outside) while
# its second item runs (its summary.txt must hold the first item's result, the second RUNNING,
# the rest PENDING, and tests.xml must parse) and call 1 under a 20 s deadline, shorter than its
# items need here (every item must end DONE, FAILED or NOT RUN, the last one cut or
# not run, within 60 s). GPU tests skip here (no GPU; one that
# does not skip fails the rehearsal: its skip detection is broken); the smoke test's CPU ranks run
# through the carried mpirun; the benchmarks print SKIP.
# The last line is `device-rehearsal: PASS ...` (exit 0), `device-rehearsal: FAIL <what>` (exit 1),
# or `device-rehearsal: SKIP <why>` (exit 77) where this machine cannot make the namespaces.
# Needs root (or CAP_SYS_ADMIN), util-linux's unshare, overlayfs, and dpkg. Logs: $OUT (default
# build-rehearsal/out: call1/, call2/, cut/, short/, prebuild.log). --keep leaves the scratch
# folder (whiteouts, wheel) for inspection.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
REPO=$PWD
KEEP=0
CHECK_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1 ;;
    --) shift; CHECK_ARGS=("$@"); break ;;
    -h | --help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "device-rehearsal: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
LIMIT=$((64 * 1024 * 1024))
export OUT=${OUT:-$REPO/build-rehearsal/out}
BUILD=${REHEARSAL_BUILD_DIR:-$REPO/build-rehearsal}
T=$(mktemp -d /tmp/zs-rehearsal.XXXXXX)
cleanup() {
  if [ $KEEP = 1 ]; then echo "device-rehearsal: scratch kept in $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
say() { echo "device-rehearsal: $*"; }
fail() { say "FAIL $*"; exit 1; }
skip() { say "SKIP $*"; exit 77; }

# ---- can this machine make the namespaces? ----
[ "$(id -u)" = 0 ] || skip "not root: mount and network namespaces need root here"
command -v unshare >/dev/null || skip "unshare (util-linux) not found"
command -v ip >/dev/null || skip "ip (iproute2) not found: the loopback of the new network namespace cannot be brought up"
command -v dpkg-query >/dev/null || skip "not a Debian system (dpkg-query not found)"
mkdir -p "$T/probe/lower" "$T/probe/upper" "$T/probe/work" "$T/probe/merged"
if ! unshare -m -n --propagation private sh -c "mount -t overlay zs-probe -o \
  lowerdir=$T/probe/lower,upperdir=$T/probe/upper,workdir=$T/probe/work $T/probe/merged" \
  2>"$T/probe.err"; then
  skip "cannot make a mount + network namespace with overlayfs: $(head -1 "$T/probe.err")"
fi

# ---- the working tree that would travel ----
travel_bytes() { # tracked + untracked-not-ignored files, plus the carried .deps
  local files deps
  files=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s -- 2>/dev/null |
    awk '{s += $1} END {print s + 0}')
  deps=$(du -sb .deps 2>/dev/null | cut -f1)
  echo $((files + ${deps:-0}))
}

if [ ! -d .deps/root ]; then
  say "no .deps: running scripts/fetch-device-deps.sh"
  scripts/fetch-device-deps.sh || fail "scripts/fetch-device-deps.sh failed"
fi
before=$(travel_bytes)
[ "$before" -le $LIMIT ] || fail "the working tree that would travel is $((before >> 20)) MiB before the run (limit 64 MiB)"

# ---- what the GPU machine lacks ----
mapfile -t PKGS < <(scripts/install-deps.sh --list)
[ "${#PKGS[@]}" -gt 0 ] || fail "scripts/install-deps.sh --list printed no packages"
python3 scripts/device-image-hide.py "${PKGS[@]}" >"$T/hidden.txt" || fail "device-image-hide.py failed"
# NCCL: the toolkit's copy is hidden, the wheel's layout offered instead.
NCCL_LIB=$(readlink -f /usr/local/cuda/lib64/libnccl.so.2 2>/dev/null || true)
NCCL_INC=$(readlink -f /usr/local/cuda/include 2>/dev/null || true)
SITE=$BUILD/wheel-site # a fixed place: the build's CMake cache remembers it
WHEEL=$SITE/nvidia/nccl
rm -rf "$SITE"
if [ -f "$NCCL_LIB" ] && [ -f "$NCCL_INC/nccl.h" ]; then
  mkdir -p "$WHEEL/lib" "$WHEEL/include"
  ln "$NCCL_LIB" "$WHEEL/lib/libnccl.so.2" 2>/dev/null || cp "$NCCL_LIB" "$WHEEL/lib/libnccl.so.2"
  cp -a "$NCCL_INC"/nccl*.h "$WHEEL/include/"
  [ -d "$NCCL_INC/nccl_device" ] && cp -a "$NCCL_INC/nccl_device" "$WHEEL/include/"
  for f in "$(dirname "$NCCL_LIB")"/libnccl* "$NCCL_INC"/nccl*; do
    readlink -m "$f"
    echo "$(dirname "$(readlink -m "$f")")/$(basename "$f")"
  done >>"$T/hidden.txt"
fi
n_hidden=0
for top in usr etc; do mkdir -p "$T/$top-up" "$T/$top-work"; done
while IFS= read -r p; do
  case "$p" in
    /usr/*) w=$T/usr-up/${p#/usr/} ;;
    /etc/*) w=$T/etc-up/${p#/etc/} ;;
    *) continue ;;
  esac
  [ -e "$w" ] && continue
  mkdir -p "$(dirname "$w")" && mknod "$w" c 0 0 && n_hidden=$((n_hidden + 1))
done < <(sort -u "$T/hidden.txt")
say "hiding $n_hidden files of ${#PKGS[@]} packages and their run-time closure, and the toolkit's NCCL"

# ---- inside the namespaces ----
cat >"$T/inner.sh" <<'INNER'
set -uo pipefail
T=$1
shift
mount -t overlay zs-usr -o "lowerdir=/usr,upperdir=$T/usr-up,workdir=$T/usr-work" /usr || exit 90
mount -t overlay zs-etc -o "lowerdir=/etc,upperdir=$T/etc-up,workdir=$T/etc-work" /etc || exit 90
ip link set lo up 2>/dev/null || exit 91
# The emulation must hold before anything runs: no carried-elsewhere tool, no network.
for t in mpirun mpicc pkg-config pkgconf; do
  if command -v "$t" >/dev/null; then echo "rehearsal: $t is still visible"; exit 92; fi
done
for f in /usr/include/hwloc.h /usr/include/mpi.h /usr/local/cuda/include/nccl.h; do
  if [ -e "$f" ]; then echo "rehearsal: $f is still visible"; exit 92; fi
done
if [ "$(ip -o link show | grep -vc ': lo:')" != 0 ]; then echo "rehearsal: a network interface other than lo"; exit 93; fi
exec "$@"
INNER
mkdir -p "$OUT" # no result of an earlier rehearsal may pass for this one's:
rm -rf "$OUT/call1" "$OUT/call2" "$OUT/cut" "$OUT/short" "$OUT/plan.txt" "$OUT/prebuild.log"
t0=$SECONDS
# The calls as the device runs them (budgets x3: 2 loaded cores here, not 16), then the cut-offs.
cat >"$T/calls.sh" <<'CALLS'
set -uo pipefail
repo=$1
shift
cd "$repo" || exit 1
scripts/device-first.sh --plan | tee "$OUT/plan.txt" || exit 14
scripts/device-prebuild.sh --log "$OUT/prebuild.log" || exit 12
rm -rf "${ZS_DEVICE_PREFIX:-/tmp/zshard-dev}/build" # a fresh machine: the pack must be unpacked
OUT=$OUT/call1 scripts/device-first.sh --scale 3 "$@" || exit 10
OUT=$OUT/call2 scripts/device-first.sh --call 2 --scale 3 "$@" || exit 11
# The device killing a call at its limit: SIGKILL to the whole call while item 2 is running.
OUT=$OUT/cut setsid scripts/device-first.sh --scale 3 "$@" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 600); do # up to 60 s for item 2 to start
  grep -qE '^2 correct +RUNNING' "$OUT/cut/summary.txt" 2>/dev/null && break
  sleep 0.1
done
kill -KILL -- -"$pid" 2>/dev/null || exit 15
wait "$pid" 2>/dev/null
# A deadline that cuts the call in its last items (ctest's stop time, not reached tests, NOT RUN):
# 20 s leaves the last item less than it needs here (53 GPU tests skipping: 12-20 s), so it is cut
# or not run however fast the machine.
t=$SECONDS
OUT=$OUT/short scripts/device-first.sh --deadline 20 "$@" >/dev/null
[ $((SECONDS - t)) -le 60 ] || exit 16
exit 0
CALLS
# shellcheck disable=SC2016 # the single-quoted script is expanded by the inner bash
unshare -m -n --propagation private env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  PYTHONPATH="$SITE" OUT="$OUT" CI="${CI:-}" ${ZS_DEVICE_PREFIX:+ZS_DEVICE_PREFIX=$ZS_DEVICE_PREFIX} \
  bash "$T/inner.sh" "$T" bash "$T/calls.sh" "$REPO" "${CHECK_ARGS[@]}"
rc=$?
first_fail() { grep -E '^[0-9]+ [a-z0-9]+ +FAILED' "$1" 2>/dev/null | head -2 | cut -c1-300 | tr '\n' ';'; }
case $rc in
  0) ;;
  90) fail "overlayfs over /usr or /etc could not be mounted" ;;
  91) fail "the loopback interface could not be brought up" ;;
  92 | 93) fail "the emulation leaks (see above)" ;;
  14) fail "the planned device time is over 14 minutes: $(cat "$OUT/plan.txt")" ;;
  12) fail "device-prebuild.sh failed under the GPU machine's constraints (log: $OUT/prebuild.log)" ;;
  10) fail "device-first.sh (call 1) failed under the GPU machine's constraints: $(first_fail "$OUT/call1/summary.txt") (logs: $OUT/call1)" ;;
  11) fail "device-first.sh --call 2 failed: $(first_fail "$OUT/call2/summary.txt") (logs: $OUT/call2)" ;;
  15) fail "device-first.sh could not be killed while its item 2 ran (logs: $OUT/cut)" ;;
  16) fail "device-first.sh --deadline 20 took more than 60 s (logs: $OUT/short)" ;;
  *) fail "the rehearsal's calls exited $rc" ;;
esac
# What a cut-off call returns: the finished item, the one in flight, the rest pending, and a
# tests.xml that still parses.
grep -qE '^1 setup +DONE' "$OUT/cut/summary.txt" && grep -qE '^2 correct +RUNNING' "$OUT/cut/summary.txt" &&
  grep -qE '^6 rest +PENDING' "$OUT/cut/summary.txt" &&
  python3 -c "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])" "$OUT/cut/tests.xml" ||
  fail "the call killed during item 2 did not leave setup DONE, correct RUNNING, rest PENDING and a readable tests.xml: $(tr '\n' ';' <"$OUT/cut/summary.txt")"
# A deadline too short for the call: every item ends in a final state, the last cut or not run.
if grep -qE '^[0-9]+ [a-z0-9]+ +(PENDING|RUNNING)' "$OUT/short/summary.txt" ||
  ! grep -qE '^6 rest +(NOT RUN: deadline|DONE .*not reached|FAILED .*(not reached|not run))' "$OUT/short/summary.txt"; then
  fail "summary.txt of the call with a 20 s deadline left items unfinished or its last item uncut: $(tr '\n' ';' <"$OUT/short/summary.txt")"
fi
echo "== call 1 as the device would report it:"
cat "$OUT/call1/summary.txt"
after=$(travel_bytes)
[ "$after" -le $LIMIT ] || fail "the working tree that would travel grew to $((after >> 20)) MiB during the run (limit 64 MiB)"
[ "$after" -eq "$before" ] || say "note: the travelling tree changed by $((after - before)) bytes during the run"
say "PASS ($(cat "$OUT/plan.txt" | sed 's/^device plan: //'); pack $(($(stat -c %s .deps/prebuilt.tar.xz) >> 10)) KiB; cut-offs keep their summaries; travels $((after >> 20)) MiB; $((SECONDS - t0)) s)"
