#!/usr/bin/env bash
# Tensor parallelism on the CPU at equal world size: train_llama on 4 ranks at tp 1 x dp 4,
# tp 2 x dp 2 and tp 4 x dp 1, the same global batch (8 sequences per step) and model, at stage 3
# and stage 0, in one run. Per configuration: the median step time after 3 warm-up steps and its
# ratio to tp 1's, this rank's communication volume per step (the engine's ring bytes, of them
# the tp group's; zs_engine_facts via the step records), and rank 0's memory at the end against
# zshard-plan --tp's prediction for the same model (params, grads, optimizer exact; buffers a
# bound; activations exact), and the median time of the optimizer update (update ms: with Muon
# its Newton-Schulz steps, each matrix's on one rank).
# Usage: [OPTIMIZER=muon] [STAGES="3 0"] bench/tp_cpu.sh [BUILD_DIR] (default build; OPTIMIZER is
# train_llama's --optimizer, default adamw). Prints a table and a last "headline:" line.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
steps=${STEPS:-11}
opt=${OPTIMIZER:-adamw}
stages=${STAGES:-3 0}
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# 8 query and 4 key-value heads, so that tp 4 divides both.
cat >"$W/model.json" <<'J'
{"model_type": "llama", "vocab_size": 256, "hidden_size": 256, "intermediate_size": 704,
 "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
 "max_position_embeddings": 128, "rope_theta": 10000.0, "rms_norm_eps": 1e-05,
 "tie_word_embeddings": false}
J
seq=128
echo "optimizer $opt"
printf '%-6s %-4s %8s %10s %10s %8s %12s %12s  %s\n' stage tp "ms/step" "vs tp 1" "update ms" \
  "comm MB" "of it tp MB" "end memory" \
  "plan (params grads optimizer activations: equal; buffers <= bound)"
for stage in $stages; do
  base=
  for tp in 1 2 4; do
    b=$((8 * tp / 4)) # sequences per data-parallel rank: 8 in all
    m=$W/s$stage.tp$tp.jsonl
    mpirun -np 4 "$build/examples/train_llama" --config "$W/model.json" --tp "$tp" \
      --stage "$stage" --batch "$b" --seq "$seq" --steps "$steps" --sample-lines 0 \
      --eval-batches 0 --optimizer "$opt" --metrics "$m" >"$W/log" 2>&1 ||
      { tail -5 "$W/log"; exit 1; }
    read -r ms upd comm tpc < <(python3 - "$m" <<'P'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
st = [r for r in rs if "comm_mb" in r][3:]
print(statistics.median(r["ms"] for r in st), statistics.median(r["update_ms"] for r in st),
      statistics.mean(r["comm_mb"] for r in st), statistics.mean(r["tp_comm_mb"] for r in st))
P
    )
    base=${base:-$ms}
    plan=$("$build/tools/zshard-plan" --model "$W/model.json" --world 4 --tp "$tp" \
      --stage "$stage" --batch "$b" --seq "$seq" --device cpu --optimizer "$opt" --json)
    check=$(python3 - "$m" "$plan" <<'P'
import json, sys
end = [json.loads(l) for l in open(sys.argv[1]) if '"when":"end"' in l][0]
plan = json.loads(sys.argv[2])["per_rank"]
got = {k: end["bytes"][k][1] for k in ("params", "grads", "optimizer", "buffers")}
ok = all(got[k] == plan[k] for k in ("params", "grads", "optimizer"))
ok = ok and got["buffers"] <= plan["buffers"] and end["activations"] == plan["activations"]
total = sum(got.values()) + end["activations"]
print("%.2f MiB %s" % (total / 2**20, "matches" if ok else "DIFFERS: %s vs %s" % (got, plan)))
P
    )
    printf '%-6s %-4s %8.1f %10.2f %10.1f %8.2f %12.2f %12s\n' "$stage" "$tp" "$ms" \
      "$(echo "$ms $base" | awk '{print $1 / $2}')" "$upd" "$comm" "$tpc" "$check"
    echo "$stage $tp $ms $base" >>"$W/rows"
  done
done
awk '$1 == 3 && $2 == 2 { r2 = $3 / $4 } $1 == 3 && $2 == 4 { r4 = $3 / $4 }
     END { printf "headline: tp_cpu: '"$opt"' stage 3 step time at tp 2 %.2fx and tp 4 %.2fx tp 1'"'"'s (4 ranks, 8 sequences of %d)\n", r2, r4, '"$seq"' }' "$W/rows"
