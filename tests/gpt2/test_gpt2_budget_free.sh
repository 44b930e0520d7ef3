#!/usr/bin/env bash
# --offload-budget free (zs_config.offload_budget_bytes = ZS_BUDGET_FREE) on the CPU device, 2
# ranks at stage 3, under a known address-space cap (ulimit -v CAP per rank; not under
# AddressSanitizer, whose shadow memory needs terabytes of address space: there the runs are
# uncapped and the bounds of step 1 are not checked):
# 1. The run trains, and its zs_engine_info line says the budget was measured ("budget B bytes
#    (free at commit, the least over 2 ranks)"). Under the cap the free memory is the RLIMIT_AS
#    room (or less, when MemAvailable per rank is): B < CAP, and B >= CAP - the largest VmPeak of
#    the two ranks (the kernel's own count, polled by a wrapper), since each rank measured
#    CAP - VmSize at commit and VmSize never exceeds VmPeak. Checked when MemAvailable / 2 (read
#    here) is above CAP, so that the RLIMIT_AS room is the least.
# 2. --offload-budget B, the measured number given explicitly: the same placement ("device D
#    bytes, K of N units on the host: ...") and byte-identical weights after the same steps
#    (--deterministic, --dump-weights).
# usage: test_gpt2_budget_free.sh TRAIN_GPT2 [MPIEXEC]
set -u
EXE=$1
MPI=${2:-mpirun}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CAP_KB=1500000
capped=1
if ldd "$EXE" 2>/dev/null | grep -q libasan; then
  capped=0
  echo "note: AddressSanitizer build: runs uncapped, the RLIMIT_AS bounds are not checked"
fi
ARGS="--steps 4 --layers 3 --channels 64 --heads 4 --seq 32 --batch 2 --stage 3 --deterministic
      --sample-lines 0 --val-frac 0 --log-every 1"
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# The per-rank wrapper: the cap, then train_gpt2, its VmPeak polled into $W/peak.<name>.<rank>.
cat >"$W/rank.sh" <<'EOF'
#!/usr/bin/env bash
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
[ "$CAPPED" = 1 ] && ulimit -v "$CAP_KB"
"$@" &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  p=$(awk '$1 == "VmPeak:" { printf "%.0f", $2 * 1024 }' "/proc/$pid/status" 2>/dev/null)
  [ -n "$p" ] && echo "$p" >"$PEAK.$r"
  sleep 0.02
done
wait "$pid"
EOF
chmod +x "$W/rank.sh"
export CAPPED=$capped CAP_KB
# train NAME ARGS...: 2 ranks under the wrapper; 1 when it did not train.
train() {
  local name=$1
  shift
  mkdir -p "$W/$name"
  # shellcheck disable=SC2086
  if ! PEAK=$W/peak.$name "$MPI" --oversubscribe -np 2 "$W/rank.sh" "$EXE" $ARGS \
    --dump-weights "$W/$name" "$@" >"$W/$name.log" 2>&1 ||
    ! grep -q "step *4/4" "$W/$name.log"; then
    bad "$name: train_gpt2 did not train 4 steps"
    tail -5 "$W/$name.log"
    return 1
  fi
  return 0
}
# The placement of a run: zs_engine_info's text from ", device " on.
placement() { grep -o "; placement: budget .*" "$W/$1.log" | sed 's/.*, device /device /'; }

if train free --offload-budget free; then
  line=$(grep -o "placement: budget [0-9]* bytes (free at commit, the least over 2 ranks)" \
    "$W/free.log")
  B=$(echo "$line" | awk '{ print $3 }')
  if [ -n "$B" ] && [ "$B" -gt 0 ]; then
    ok "free: trained; the budget measured at commit is $B bytes ($(placement free))"
  else
    bad "free: zs_engine_info does not name a measured budget"
    grep -o "placement: .*" "$W/free.log"
    B=""
  fi
  if [ -n "$B" ] && [ "$capped" = 1 ]; then
    cap=$((CAP_KB * 1024))
    peak=$(cat "$W"/peak.free.* | sort -n | tail -1)
    avail=$(awk '$1 == "MemAvailable:" { printf "%.0f", $2 * 1024 }' /proc/meminfo)
    if [ $((avail / 2)) -le "$cap" ]; then
      echo "note: MemAvailable / 2 = $((avail / 2)) is not above the cap $cap: bounds not checked"
    elif [ "$B" -lt "$cap" ] && [ "$B" -ge $((cap - peak)) ]; then
      ok "free: $B bytes is the RLIMIT_AS room: in [cap $cap - VmPeak $peak, cap)"
    else
      bad "free: $B bytes is not in [cap $cap - VmPeak $peak, cap)"
    fi
  fi
  if [ -n "$B" ] && train explicit --offload-budget "$B"; then
    if [ "$(placement free)" = "$(placement explicit)" ] && [ -n "$(placement free)" ]; then
      ok "explicit --offload-budget $B: the same placement ($(placement explicit))"
    else
      bad "placement: free '$(placement free)', explicit '$(placement explicit)'"
    fi
    n=0
    diffs=0
    for f in "$W"/free/*; do
      n=$((n + 1))
      cmp -s "$f" "$W/explicit/$(basename "$f")" || diffs=$((diffs + 1))
    done
    if [ "$n" -gt 0 ] && [ "$diffs" = 0 ]; then
      ok "explicit --offload-budget $B: byte-identical weights ($n files)"
    else
      bad "weights: $diffs of $n files differ between the free and the explicit budget"
    fi
  fi
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
