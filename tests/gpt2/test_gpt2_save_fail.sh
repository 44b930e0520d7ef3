#!/usr/bin/env bash
# A disk that fills up during a run (a 24 MiB file system of its own: tests/offload/
# nvme_full_fs.sh runs this script with its mount point last). train_gpt2 on 2 ranks saves every
# 2 steps with --ckpt-async 1: the step-2 checkpoint (about 12 MB) fits, those of steps 4 and 6
# cannot (the older one is deleted only after a newer one commits). Each failure is reported,
# training goes on to the end, the step-2 checkpoint stays the latest and a new run resumes from
# it; with --save-retries 1 the second failure in a row stops the run.
# usage: test_gpt2_save_fail.sh TRAIN_GPT2 MPIEXEC MOUNT_DIR
set -u
EXE=$1 MPIEXEC=$2 MNT=$3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() {
  cat "$W"/*.log
  echo "FAIL: $*"
  exit 1
}
T=(--layers 5 --channels 128 --heads 2 --seq 16 --batch 2 --eval-every 0 --sample-lines 0
  --steps 6 --save-every 2 --ckpt-async 1 --ckpt-dir "$MNT/ck")
"$MPIEXEC" --oversubscribe -np 2 "$EXE" "${T[@]}" >"$W/run.log" 2>&1 ||
  fail "the run stopped on a failed save it should have survived"
grep -q "checkpoint: step 2 committed" "$W/run.log" || fail "step 2 was not committed"
for s in 4 6; do
  grep -qE "checkpoint: the background write of step $s failed \($((s / 2 - 1)) in a row; --save-retries 3\)" "$W/run.log" ||
    fail "the failed save of step $s was not reported"
done
[ "$(ls "$MNT/ck")" = ckpt-000000000002 ] || fail "$MNT/ck holds $(ls "$MNT/ck"), not the step-2 checkpoint alone"
[ -f "$MNT/ck/ckpt-000000000002/manifest.json" ] || fail "the step-2 checkpoint is not committed"
grep -qE "^step +6" "$W/run.log" || grep -q "step 6/6" "$W/run.log" || fail "training did not reach step 6"
# It resumes from step 2.
"$MPIEXEC" --oversubscribe -np 2 "$EXE" "${T[@]}" --save-every 0 --resume "$MNT/ck" >"$W/resume.log" 2>&1 ||
  fail "the resume from the step-2 checkpoint failed"
grep -qi "resum.*step 2\|from step 2" "$W/resume.log" || fail "the resume did not start after step 2"
# With --save-retries 1 (the disk now has room for no checkpoint): the second failure stops it.
"$MPIEXEC" --oversubscribe -np 2 "$EXE" "${T[@]}" --save-retries 1 --ckpt-dir "$MNT/ck2" \
  >"$W/stop.log" 2>&1 && fail "the run went on past --save-retries"
grep -q "2 saves in a row failed (more than --save-retries 1)" "$W/stop.log" ||
  fail "the stop does not say why"
echo "test_gpt2_save_fail: failed saves reported and survived, the last good checkpoint resumes"
