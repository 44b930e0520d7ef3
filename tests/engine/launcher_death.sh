#!/usr/bin/env bash
# mpirun killed with SIGKILL, its ranks left running (test_engine_launcher trains and saves
# silently): each rank must notice within seconds that its launcher is gone, stop with a message
# that says so, commit no checkpoint after that, and exit.
# Usage: launcher_death.sh MPIEXEC EXE
set -u
mpiexec=$1 exe=$2
W=$(mktemp -d)
cleanup() {
  pkill -9 -f "$exe $W" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
fail() {
  cat "$W"/*.txt "$W/log" 2>/dev/null
  echo "FAIL: $*"
  exit 1
}
"$mpiexec" --oversubscribe -np 2 "$exe" "$W" >"$W/log" 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  compgen -G "$W/ck/ckpt-*/manifest.json" >/dev/null && break
  sleep 0.1
done
compgen -G "$W/ck/ckpt-*/manifest.json" >/dev/null || fail "no checkpoint was committed"
kill -9 "$launcher"
wait "$launcher" 2>/dev/null
for _ in $(seq 1 600); do
  [ -f "$W/stopped-rank0.txt" ] && [ -f "$W/stopped-rank1.txt" ] && break
  sleep 0.1
done
for r in 0 1; do
  [ -f "$W/stopped-rank$r.txt" ] || fail "rank $r trained on for 60 s after its launcher died"
done
grep -q "launcher" "$W/stopped-rank0.txt" "$W/stopped-rank1.txt" || fail "no rank says its launcher died"
newest=$(ls "$W/ck" | tail -n 1)
sleep 2
pgrep -f "$exe $W" >/dev/null && fail "ranks are still running"
[ "$(ls "$W/ck" | tail -n 1)" = "$newest" ] || fail "a checkpoint was committed after the ranks stopped"
echo "launcher_death: both ranks stopped:"
cat "$W/stopped-rank0.txt" "$W/stopped-rank1.txt"
