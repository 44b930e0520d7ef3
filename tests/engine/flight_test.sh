#!/usr/bin/env bash
# The flight recorder end to end: a stuck peer (test_engine_timeout), a rank late to commit
# (--commit) and a divergence (--diverge) on 3 ranks with ZS_FLIGHT_DIR set; every rank must write its
# record and name it in its error (the program checks), and tools/flight/zshard-flight must name
# the late rank and the collective, or the ranks' different calls. Then records made up here for
# what a live run cannot stage cheaply: a rank that wrote nothing (killed, frozen) and a rank that
# stopped a collective early.
# Usage: flight_test.sh MPIEXEC TEST_ENGINE_TIMEOUT ZSHARD_FLIGHT PYTHON3
set -euo pipefail
mpiexec=$1 exe=$2 tool=$3 py=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "flight_test: $*" >&2; exit 1; }
expect() { # expect FILE TEXT: TEXT is in FILE
  grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "no '$2' in the tool's output"; }
}

ZS_FLIGHT_DIR=$tmp/stuck "$mpiexec" --oversubscribe -np 3 "$exe"
for r in 0 1 2; do [ -s "$tmp/stuck/flight-rank$r.json" ] || fail "rank $r wrote no record"; done
"$py" "$tool" "$tmp/stuck" >"$tmp/stuck.txt"
expect "$tmp/stuck.txt" "verdict: group world (ranks 0, 1, 2): rank 1 called collective #"
expect "$tmp/stuck.txt" "after rank(s) 0, 2" # ", which had given up waiting" unless loaded
expect "$tmp/stuck.txt" "all_gather in zs_unit_gather('u1')"

# A rank late to zs_engine_commit: the others' agreement times out before anything is allocated,
# and still every rank writes its record.
ZS_FLIGHT_DIR=$tmp/commit "$mpiexec" --oversubscribe -np 3 "$exe" --commit
"$py" "$tool" "$tmp/commit" >"$tmp/commit.txt"
expect "$tmp/commit.txt" "rank 1 called collective #"
expect "$tmp/commit.txt" "in zs_engine_commit outside a step (after 0 steps) (failed: ZS_ERR_TIMEOUT)"

# The divergence with a ring of 4 entries: each record holds the last 4, the newest last.
ZS_FLIGHT_ENTRIES=4 ZS_FLIGHT_DIR=$tmp/diverge "$mpiexec" --oversubscribe -np 3 "$exe" --diverge
"$py" - "$tmp/diverge" <<'PY' || fail "the 4-entry rings are wrong"
import json, sys
for r in range(3):
    rec = json.load(open(f"{sys.argv[1]}/flight-rank{r}.json"))
    seqs = [e["seq"] for e in rec["entries"]]
    assert rec["recorded"] > 4 and len(seqs) == 4, (r, rec["recorded"], seqs)
    assert seqs == list(range(seqs[0], seqs[0] + 4)), (r, seqs)
    assert rec["entries"][-1]["state"] == "failed", (r, rec["entries"][-1])
PY
"$py" "$tool" "$tmp/diverge" >"$tmp/diverge.txt"
expect "$tmp/diverge.txt" "the ranks diverged at collective #"
expect "$tmp/diverge.txt" "rank(s) 0, 2 called all_gather of 334 elements in zs_unit_gather('u1')"
expect "$tmp/diverge.txt" "rank(s) 1 called all_gather of 334 elements in zs_unit_gather('u0')"

# Made-up records: rank 2 of 3 wrote nothing; then rank 1's last collective is #4 of 5.
"$py" - "$tmp/made" <<'PY'
import json, os, sys
def entry(seq, call, state="done"):
    return {"seq": seq, "group": "world", "op": "all_reduce", "state": state,
            "status": "ZS_ERR_TIMEOUT", "call": call, "count": 1, "bytes": 4,
            "called_us": 1000 * seq, "started_us": 1000 * seq + 1, "ended_us": 1000 * seq + 2}
def write(d, rank, entries):
    os.makedirs(d, exist_ok=True)
    rec = {"format": "zshard-flight", "version": 1, "rank": rank, "world_size": 3, "host": "h",
           "pid": rank, "written_us": 0, "timeout_s": 5, "reason": "timed out", "recorded": 5,
           "groups": [{"name": "world", "rank": rank, "size": 3, "members": [0, 1, 2]}],
           "entries": entries}
    json.dump(rec, open(os.path.join(d, f"flight-rank{rank}.json"), "w"))
base = sys.argv[1]
calls = ["zs_engine_step in step %d" % s for s in range(1, 6)]
for r in (0, 1):
    write(base + "/missing", r, [entry(s, calls[s - 1]) for s in range(1, 5)] +
          [entry(5, calls[4], "failed")])
for r in (0, 2):
    write(base + "/behind", r, [entry(s, calls[s - 1]) for s in range(1, 5)] +
          [entry(5, calls[4], "failed")])
write(base + "/behind", 1, [entry(s, calls[s - 1]) for s in range(1, 5)])
PY
"$py" "$tool" "$tmp/made/missing" >"$tmp/missing.txt"
expect "$tmp/missing.txt" "none from rank(s) 2"
expect "$tmp/missing.txt" "rank(s) 2 wrote no record (killed, frozen, or its engine did not fail); rank(s) 0, 1 waited in collective #5"
"$py" "$tool" "$tmp/made/behind" >"$tmp/behind.txt"
expect "$tmp/behind.txt" "rank 1 stopped after collective #4 on group world: all_reduce in zs_engine_step in step 4; it never called collective #5, in which rank(s) 0, 2 waited"
echo "flight_test: the records and the tool's verdicts are right"
