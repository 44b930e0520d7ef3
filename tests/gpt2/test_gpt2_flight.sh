#!/usr/bin/env bash
# --flight-dir DIR in the GPT-2 example: two ranks told different step counts (one mpirun, two
# command lines), so rank 0 leaves the loop after 2 steps while rank 1 starts a third. Both must
# fail at the first collective where they differ, name their flight records in their messages,
# and tools/flight/zshard-flight must say where they diverged and what each rank called.
# usage: test_gpt2_flight.sh TRAIN_GPT2 SRC MPIEXEC PYTHON3
set -u
EXE=$1 SRC=$2 MPIEXEC=$3 PY=$4
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
T=(--layers 1 --channels 32 --heads 2 --seq 16 --batch 2 --eval-every 0 --sample-lines 0
  --flight-dir "$W/fl")
ZS_COMM_TIMEOUT_S=60 "$MPIEXEC" --oversubscribe -np 1 "$EXE" "${T[@]}" --steps 2 : \
  -np 1 "$EXE" "${T[@]}" --steps 3 >"$W/run.log" 2>&1 &&
  { echo "FAIL: the diverging run succeeded"; exit 1; }
for r in 0 1; do
  grep -qF "flight record: $W/fl/flight-rank$r.json" "$W/run.log" ||
    { cat "$W/run.log"; echo "FAIL: rank $r's message names no flight record"; exit 1; }
done
"$PY" "$SRC/tools/flight/zshard-flight" "$W/fl" >"$W/tool.txt" ||
  { cat "$W/tool.txt"; echo "FAIL: zshard-flight reached no verdict"; exit 1; }
for want in "the ranks diverged at collective #" \
  "rank\(s\) 0 called all_gather of [0-9]+ elements in zs_unit_gather\('embedding'\) outside a step \(after 2 steps\)" \
  "rank\(s\) 1 called all_gather of [0-9]+ elements in zs_unit_gather\('embedding'\) in step 3"; do
  grep -qE -- "$want" "$W/tool.txt" || { cat "$W/tool.txt"; echo "FAIL: no '$want'"; exit 1; }
done
echo "test_gpt2_flight: both ranks wrote their records and the tool names the divergence"
