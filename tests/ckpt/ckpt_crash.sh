#!/usr/bin/env bash
# A crash in the middle of a save: rank 1 stops for good after writing K bytes of its file (the
# library's ZS_TEST_CKPT_PAUSE_BYTES hook) and the job is killed with SIGKILL. The checkpoint
# before it must still be the latest one, load on another world size and give the straight run's
# bits; the next save clears what the crash left.
# Usage: ckpt_crash.sh MPIEXEC EXE
set -euo pipefail
mpiexec=$1 exe=$2
tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill -9 -- "-$pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
ck=$tmp/ckpt
export ZS_TEST_CKPT_BLOCK_BYTES=256 # several blocks per file
"$mpiexec" --oversubscribe -np 1 "$exe" --stage 0 --micro 6 --steps 10 --write "$tmp/straight.bin"
# Step 3: the good checkpoint.
"$mpiexec" --oversubscribe -np 2 "$exe" --stage 3 --micro 3 --steps 3 --save "$ck"
# Steps 4-5, then a save that dies after rank 1 wrote 1000 bytes (its file has about 2 KB).
set -m
ZS_TEST_CKPT_PAUSE_BYTES=1000 ZS_TEST_CKPT_PAUSE_RANK=1 \
  "$mpiexec" --oversubscribe -np 2 "$exe" --stage 3 --micro 3 --steps 5 --load "$ck" --save "$ck" &
pid=$!
set +m
for _ in $(seq 1 600); do
  compgen -G "$ck/ckpt-*/rank-00001.zsd.tmp.paused" >/dev/null && break
  sleep 0.1
done
compgen -G "$ck/ckpt-*/rank-00001.zsd.tmp.paused" >/dev/null || { echo "FAIL: the save never paused"; exit 1; }
kill -9 -- "-$pid"
wait "$pid" 2>/dev/null || true
pid=""
ls -R "$ck"
[ -f "$ck/ckpt-000000000003/manifest.json" ] || { echo "FAIL: the good checkpoint (step 3) is gone"; exit 1; }
[ ! -f "$ck/ckpt-000000000005/manifest.json" ] || { echo "FAIL: the killed save committed"; exit 1; }
[ -f "$ck/ckpt-000000000005/rank-00001.zsd.tmp" ] || { echo "FAIL: no partial file: the crash did not happen mid-write"; exit 1; }
# The previous checkpoint loads on 3 ranks at stage 2 and gives the straight run's bits; its save
# removes the crashed attempt.
"$mpiexec" --oversubscribe -np 3 "$exe" --stage 2 --micro 2 --steps 10 --load "$ck" --save "$ck" \
  --compare "$tmp/straight.bin" --tol 0
[ ! -e "$ck/ckpt-000000000005" ] || { echo "FAIL: the crashed save's directory is still there"; exit 1; }
[ -f "$ck/ckpt-000000000010/manifest.json" ] || { echo "FAIL: no new checkpoint (step 10)"; exit 1; }
echo "ckpt_crash: the checkpoint before the crash loads bit-exactly; the next save cleaned up"
