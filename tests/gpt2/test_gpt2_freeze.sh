#!/usr/bin/env bash
# train_gpt2 --freeze blocks on 2 ranks at stage 3: the exported blocks (every "h.*" tensor) are
# byte for byte those of the initial model after 3 steps, the embedding and ln_f trained, and
# the ledger's gradient and optimizer bytes are those of the trainable units only (the start's
# memory event against the unfrozen run's: smaller by the blocks' share).
# Usage: test_gpt2_freeze.sh TRAIN_GPT2 MPIEXEC
set -euo pipefail
exe=$1
mpiexec=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shape=(--stage 3 --layers 2 --channels 64 --heads 4 --seq 32 --batch 4 --eval-every 0
  --sample-lines 0)
"$mpiexec" --oversubscribe -np 2 "$exe" "${shape[@]}" --steps 0 --export "$tmp/init.safetensors" \
  --metrics "$tmp/init.jsonl" >"$tmp/init.log" 2>&1 || {
  cat "$tmp/init.log"
  exit 1
}
"$mpiexec" --oversubscribe -np 2 "$exe" "${shape[@]}" --steps 3 --freeze blocks \
  --export "$tmp/end.safetensors" --metrics "$tmp/end.jsonl" >"$tmp/end.log" 2>&1 || {
  cat "$tmp/end.log"
  exit 1
}
python3 - "$tmp" <<'PY'
import json, struct, sys
d = sys.argv[1]
def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in h.items()
            if k != "__metadata__"}
a, b = tensors(d + "/init.safetensors"), tensors(d + "/end.safetensors")
bad = 0
for k in sorted(a):
    frozen = k.startswith("h.")
    if (a[k] == b[k]) != frozen:
        print("FAIL %s: %s" % (k, "changed though frozen" if frozen else "did not train"))
        bad = 1
def mem(path):
    for line in open(path):
        e = json.loads(line)
        if e.get("event") == "memory":
            return e["bytes"]
m0, m1 = mem(d + "/init.jsonl"), mem(d + "/end.jsonl")
for cat in ("grads", "optimizer"):
    if not m1[cat][0] < m0[cat][0]:
        print("FAIL %s: %d bytes frozen, %d trainable" % (cat, m1[cat][0], m0[cat][0]))
        bad = 1
if m1["params"][0] != m0["params"][0]:
    print("FAIL params differ")
    bad = 1
print("test_gpt2_freeze: %d tensors, blocks unchanged, grads %d -> %d, optimizer %d -> %d bytes: %s"
      % (len(a), m0["grads"][0], m1["grads"][0], m0["optimizer"][0], m1["optimizer"][0],
         "FAIL" if bad else "OK"))
sys.exit(bad)
PY
