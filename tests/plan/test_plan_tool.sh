#!/usr/bin/env bash
# zshard-plan against independent references: the ZeRO paper's per-device model states
# (Rajbhandari et al. 2020, Figure 1: psi = 7.5B, 64 devices, K = 12), refusal sentences and
# --recommend orders worked out by hand in the comments below, and the GPT-2 example's own
# activation and model-state bytes (its --metrics memory event).
# Usage: test_plan_tool.sh ZSHARD_PLAN TRAIN_GPT2 MPIEXEC
set -euo pipefail
plan=$1
train=$2
mpiexec=$3
fail=0
check() { # name got want
  if [ "$2" != "$3" ]; then
    echo "FAIL $1:"
    echo "  got:  $2"
    echo "  want: $3"
    fail=1
  else
    echo "ok   $1"
  fi
}
# The host arena's figures below are worked out for 4 KiB pages (each array whole pages).
if [ "$(getconf PAGESIZE)" != 4096 ]; then
  echo "skip: the page is $(getconf PAGESIZE) bytes, the figures below assume 4096"
  exit 77
fi
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# 1. The ZeRO paper: bf16 params and grads (2 + 2 bytes), fp32 master + Adam m + v (12 bytes):
#    stage 0 16 psi = 120 GB, stage 1 4 psi + 12 psi/64 = 31.4 GB, stage 2 2 psi + 14 psi/64 =
#    16.6 GB, stage 3 16 psi/64 = 1.9 GB (7.5e9 / 64 has no padding).
want=(120000000000 31406250000 16640625000 1875000000)
paper=(120.0 31.4 16.6 1.9)
for s in 0 1 2 3; do
  got=$("$plan" --params 7.5e9 --world 64 --stage $s --dtype bf16 --model-states-only --json |
    field 'd["per_rank"]["model_states"]')
  check "ZeRO paper stage $s bytes" "$got" "${want[$s]}"
  check "ZeRO paper stage $s GB" "$(awk -v b="$got" 'BEGIN { printf "%.1f", b / 1e9 }')" "${paper[$s]}"
done

# 1b. Optimizer-state precision, by hand: fp32 params and grads (4 + 4 bytes), stage 1 on 64
#    ranks: an fp32 master copy gives 8 psi + 12 psi/64 = 61406250000 bytes; --master params (m
#    and v only) 8 psi + 8 psi/64 = 60937500000; bf16 params cannot be the master (refused).
for m in fp32:61406250000 params:60937500000; do
  got=$("$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --master "${m%%:*}" \
    --model-states-only --json | field 'd["per_rank"]["model_states"]')
  check "master ${m%%:*} stage 1 bytes" "$got" "${m#*:}"
done
# bf16 moments on top (8 psi + 4 psi/64 = 60468750000), and bf16 moments alone with bf16 params
# at stage 0 (2 + 2 + 4 + 2 + 2 bytes = 12 psi = 90e9).
got=$("$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --master params --moment-dtype bf16 \
  --model-states-only --json | field 'd["per_rank"]["model_states"]')
check "master params + bf16 moments stage 1 bytes" "$got" 60468750000
got=$("$plan" --params 7.5e9 --world 64 --stage 0 --dtype bf16 --moment-dtype bf16 \
  --model-states-only --json | field 'd["per_rank"]["model_states"]')
check "bf16 moments stage 0 bytes" "$got" 90000000000
# fp32 accumulation of bf16 gradients: the persistent gradient is fp32 (stage 2: 2 psi + 4 psi/64 +
# 12 psi/64 = 16875000000; stage 0: 2 + 4 + 12 psi = 135e9).
got=$("$plan" --params 7.5e9 --world 64 --stage 2 --dtype bf16 --grad-accum-dtype fp32 \
  --model-states-only --json | field 'd["per_rank"]["model_states"]')
check "fp32 grad accumulation stage 2 bytes" "$got" 16875000000
got=$("$plan" --params 7.5e9 --world 64 --stage 0 --dtype bf16 --grad-accum-dtype fp32 \
  --model-states-only --json | field 'd["per_rank"]["model_states"]')
check "fp32 grad accumulation stage 0 bytes" "$got" 135000000000
# The optimizer's state list sizes the plan: SGD with momentum keeps one buffer (stage 1, fp32:
# 8 psi + (4 + 4) psi/64 = 60937500000), plain SGD none beside the master (8 psi + 4 psi/64 =
# 60468750000).
got=$("$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --optimizer sgd \
  --model-states-only --json | field 'd["per_rank"]["model_states"]')
check "sgd with momentum stage 1 bytes" "$got" 60937500000
got=$("$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --optimizer sgd --momentum 0 \
  --model-states-only --json | field 'd["per_rank"]["model_states"]')
check "plain sgd stage 1 bytes" "$got" 60468750000
got=$("$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --optimizer lion \
  --model-states-only --json | field 'd["per_rank"]["model_states"]')
check "lion stage 1 bytes" "$got" 60937500000
if "$plan" --params 7.5e9 --world 64 --stage 1 --dtype bf16 --master params >/dev/null 2>&1; then
  check "master params with bf16 params refused" "accepted" "refused"
fi
# With offload, by hand (psi/64 = 117187500 elements per rank): stage 3, optimizer and params
# offloaded, params the master, bf16 moments: the arena holds the fp32 param shard (the master)
# and m, v in bf16, 8 bytes each = 937500000, each array rounded up to 4 KiB pages (468750336 +
# 2 x 234377216 = 937504768), the device the fp32 grad shard 468750000; stage 1 with the
# optimizer alone offloaded: the params stay on the device, so the arena keeps an fp32 master
# beside m and v: 12 bytes each = 1406250000, in pages 3 x 468750336 = 1406251008 (the same as
# an fp32 master).
got=$("$plan" --params 7.5e9 --world 64 --stage 3 --dtype fp32 --master params --moment-dtype bf16 \
  --offload opt+params --device cpu --model-states-only --json |
  field '"%d %d" % (d["per_rank"]["host_pinned"], d["per_rank"]["grads"])')
check "master params + bf16 moments, opt+params offload, stage 3 host/grads" "$got" "937504768 468750000"
got=$("$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --master params --offload opt \
  --device cpu --model-states-only --json | field 'd["per_rank"]["host_pinned"]')
check "master params, optimizer offload, stage 1 host" "$got" 1406251008
# Lean mode (the bf16 params are the master): bf16 params and grads (2 + 2 bytes) and m, v: at
# stage 0 12 psi = 90e9 (8 psi = 60e9 with bf16 moments); stage 3 on 64 ranks 12 psi / 64 =
# 1406250000. fp32 params cannot be lean (refused).
for m in fp32:0:90000000000 bf16:0:60000000000 fp32:3:1406250000; do
  IFS=: read -r md st want_b <<<"$m"
  got=$("$plan" --params 7.5e9 --world 64 --stage "$st" --dtype bf16 --master lean \
    --moment-dtype "$md" --model-states-only --json | field 'd["per_rank"]["model_states"]')
  check "lean, $md moments, stage $st bytes" "$got" "$want_b"
done
if "$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --master lean >/dev/null 2>&1; then
  check "lean with fp32 params refused" "accepted" "refused"
fi
# The remainder master (bf16 params + 2-byte remainder + m + v), stage 0: 2 + 2 + 2 + 8 = 14 psi
# = 105e9 bytes; with bf16 moments 2 + 2 + 2 + 4 = 10 psi = 75e9; stage 1 on 64 ranks with bf16
# moments 4 psi + 6 psi/64 = 30703125000. fp32 params cannot take a remainder (refused).
for m in "0 fp32:105000000000" "0 bf16:75000000000" "1 bf16:30703125000"; do
  s=${m%% *} md=${m#* }
  got=$("$plan" --params 7.5e9 --world 64 --stage "$s" --dtype bf16 --master remainder \
    --moment-dtype "${md%%:*}" --model-states-only --json | field 'd["per_rank"]["model_states"]')
  check "master remainder stage $s moments ${md%%:*} bytes" "$got" "${md#*:}"
done
if "$plan" --params 7.5e9 --world 64 --stage 1 --dtype fp32 --master remainder >/dev/null 2>&1; then
  check "master remainder with fp32 params refused" "accepted" "refused"
fi
# The remainder and lean modes offloaded, by hand (psi/64 = 117187500 elements per rank): lean,
# stage 3, optimizer and params offloaded, bf16 moments: the arena holds the bf16 param shard (the
# master) and m, v in bf16, 6 bytes each = 703125000, in pages 3 x 234377216 = 703131648, the
# device the bf16 grad shard 234375000; the remainder master at stage 1 with the optimizer
# offloaded: the arena holds the 2-byte remainder and fp32 m, v, 10 bytes each = 1171875000, in
# pages 234377216 + 2 x 468750336 = 1171877888 (the bf16 params stay on the device).
got=$("$plan" --params 7.5e9 --world 64 --stage 3 --dtype bf16 --master lean --moment-dtype bf16 \
  --offload opt+params --device cpu --model-states-only --json |
  field '"%d %d" % (d["per_rank"]["host_pinned"], d["per_rank"]["grads"])')
check "lean + bf16 moments, opt+params offload, stage 3 host/grads" "$got" "703131648 234375000"
got=$("$plan" --params 7.5e9 --world 64 --stage 1 --dtype bf16 --master remainder --offload opt \
  --device cpu --model-states-only --json | field 'd["per_rank"]["host_pinned"]')
check "master remainder, optimizer offload, stage 1 host" "$got" 1171877888

# 2. Refusals. 25e9 bf16 params in 1000 units, stage 3, 4 ranks: model states 16 psi / 4 =
#    100e9; buffers (2 held + 1 prefetched) x 25e6 x 2 bytes gathered + one 50e6 full gradient +
#    2568 bytes of norm bins = 200002568; 100200002568 bytes = 93.3 GiB > 80 GiB. 8 ranks: 50.2e9
#    fits; optimizer offload leaves 25.2e9 on the GPU (75e9 on the 512 GiB host): fits.
got=$("$plan" --params 25e9 --units 1000 --dtype bf16 --world 4 --stage 3 --device cuda \
  --device-mem 80G --host-mem 512G --json | field 'd["verdict"]')
check "refusal at stage 3" "$got" \
  "does not fit: needs 93.3 GiB on each GPU at stage 3 with 4 ranks; fits with 8 ranks or with optimizer offload"
#    1e9 fp32 params in 10 units on the CPU device, 4 ranks with 8 GiB each: stage 0 needs
#    (4 + 4 + 12) x 1e9 + 2568 = 18.6 GiB; stage 1 4 + 4 + 3 = 11e9 does not fit; stage 2
#    4 + 1 + 3 = 8e9 plus one 400e6 full gradient = 7.8 GiB fits.
got=$("$plan" --params 1e9 --units 10 --world 4 --stage 0 --device cpu --device-mem 8G --json |
  field 'd["verdict"]')
check "refusal at stage 0 (CPU)" "$got" \
  "does not fit: needs 18.6 GiB on each rank at stage 0 with 4 ranks; fits at stage 2"

# 3. --recommend. Communication per step (ZeRO: 2 psi at stages 0-2, 3 psi at stage 3) times
#    (N-1)/N at 100 GB/s, plus offload copies at 25 GB/s (2 psi/N optimizer, 3 psi/N with params):
#    in units of psi x 1e-11 s at 4 ranks and fp32: stages 0-2 6, stage 3 9, + 8 (opt), + 12
#    (opt+params). Ties go to the smaller device total (stage 2 < 1 < 0).
order() { field '" ".join("%d/%s" % (c["stage"], c["offload"]) for c in d["recommend"])'; }
got=$("$plan" --params 1e9 --units 100 --world 4 --device cuda --device-mem 1T --host-mem 1T \
  --recommend --json | order)
check "recommend, everything fits" "$got" \
  "2/none 1/none 0/none 3/none 2/opt 1/opt 3/opt 3/opt+params"
#    4e8 fp32 params in 100 units, 2.5 GiB per GPU: stage 3 needs 1.6e9 + 64e6 (3 gathered units
#    and a gradient of 16e6); stage 2 3.2e9 does not fit but with the optimizer offloaded 2.016e9
#    does; stage 1 with offload 3.2e9 and stage 0 6.4e9 do not.
got=$("$plan" --params 4e8 --units 100 --world 4 --device cuda --device-mem 2.5G --host-mem 1T \
  --recommend --json | order)
check "recommend, tight" "$got" "3/none 2/opt 3/opt 3/opt+params"
got=$("$plan" --params 4e8 --units 100 --world 4 --device cuda --device-mem 100M --host-mem 1T \
  --recommend --json | order)
check "recommend, nothing fits" "$got" ""

# 4. The GPT-2 example's own bytes: activations (with and without recompute; the CPU kernels are
#    fp32 only) and model states as its ledger reports them at the start (--metrics memory event).
shape=(--layers 3 --channels 96 --heads 3 --vocab 256 --seq 32 --batch 3)
#    With --freeze (issue 18): frozen units cost params only, and the example's throw-away weight
#    gradient of the largest frozen unit is part of its activations.
#    With bf16 params on the CPU device the example computes in fp32 on widened units: fp32
#    activations plus 8 bytes per element of the largest unit (examples/common/widen.h).
for extra in "--dtype fp32" "--dtype fp32 --recompute" "--dtype fp32 --freeze blocks" \
  "--dtype fp32 --freeze 0,2" "--dtype bf16" "--dtype bf16 --freeze 0,2"; do
  met=$(mktemp)
  # shellcheck disable=SC2086
  "$mpiexec" --oversubscribe -np 2 "$train" --stage 3 "${shape[@]}" $extra --steps 0 \
    --eval-every 0 --sample-lines 0 --metrics "$met" >/dev/null 2>&1 || {
    echo "FAIL train_gpt2 $extra"
    fail=1
    continue
  }
  ev=$(grep '"event":"memory"' "$met" | head -n1)
  rm -f "$met"
  meas=$(field '"%d %d %d %d" % (d["activations"], d["bytes"]["params"][0], d["bytes"]["grads"][0], d["bytes"]["optimizer"][0])' <<<"$ev")
  dt=${extra#--dtype }
  dt=${dt%% *}
  rec=()
  case $extra in *--recompute*) rec=(--recompute) ;; esac
  case $extra in *--freeze*) rec+=(--freeze "${extra##*--freeze }") ;; esac
  pred=$("$plan" --world 2 --stage 3 --device cpu --dtype "$dt" "${rec[@]}" "${shape[@]}" --json |
    field '"%d %d %d %d" % (d["per_rank"]["activations"], d["per_rank"]["params"], d["per_rank"]["grads"], d["per_rank"]["optimizer"])')
  check "GPT-2 example $extra: activations params grads optimizer" "$pred" "$meas"
done

# 4b. --optimizer muon plans the examples' grouping from the units' tensors (zs_plan_model_units):
#    the state each tensor's optimizer keeps (the example's ledger), and the Muon step's whole-tensor
#    buffers,
#    which set the example's buffer peak at stage 2: on the owner rank a block's padded 111840
#    elements plus the Newton-Schulz scratch of its largest matrix (fc, 384 x 96: 2 * 96 * 384 +
#    2 * 96 * 96 = 92160 floats), 816000 bytes. The plan bounds that peak within the few KiB of its
#    other buffers; AdamW's plan (no groups) is below it.
#    Optimizer bytes per rank, by hand (stage 2 on 2 ranks, fp32): AdamW keeps master, m and v,
#    12 bytes an element of each rank's half: the embeddings' 27648 and ln_f's 192 elements and
#    three blocks' 111840, 12 * (13824 + 96 + 3 * 55920) = 2180160. Under Muon the embeddings and
#    ln_f keep the same (167040); a block keeps master and momentum over its half (8 * 55920) and
#    AdamW's v packed for its vectors alone: rank 0's half holds ln1 (192), qkv_b (288), proj_b (96)
#    and ln2 (192), 768; rank 1's fc_b (384) and fcproj_b (96), 480; each rank keeps the larger,
#    4 * 768 bytes. 167040 + 3 * (447360 + 3072) = 1518336.
met=$(mktemp)
"$mpiexec" --oversubscribe -np 2 "$train" --stage 2 "${shape[@]}" --dtype fp32 --steps 1 \
  --optimizer muon --eval-every 0 --sample-lines 0 --metrics "$met" >/dev/null 2>&1 || {
  echo "FAIL train_gpt2 --optimizer muon"
  fail=1
}
ev=$(grep '"event":"memory","when":"end"' "$met" | head -n1)
rm -f "$met"
meas=$(field '"%d %d" % (d["bytes"]["optimizer"][0], d["bytes"]["buffers"][1])' <<<"$ev")
check "GPT-2 example --optimizer muon: buffer peak of the whole step" "${meas#* }" 816000
check "GPT-2 example --optimizer muon: optimizer bytes" "${meas% *}" 1518336
for o in muon adamw; do
  pred=$("$plan" --world 2 --stage 2 --device cpu --dtype fp32 "${shape[@]}" --optimizer $o --json |
    field '"%d %d" % (d["per_rank"]["optimizer"], d["per_rank"]["buffers"])')
  check "zshard-plan --optimizer $o: optimizer bytes" "${pred% *}" \
    "$([ $o = muon ] && echo 1518336 || echo 2180160)"
  want=$([ $o = muon ] && echo "within 4 KiB above" || echo below)
  got=$(awk -v p="${pred#* }" -v m="${meas#* }" \
    'BEGIN { print (p >= m && p - m <= 4096) ? "within 4 KiB above" : (p < m ? "below" : "over") }')
  check "zshard-plan --optimizer $o: buffers ${pred#* } against the peak ${meas#* }" "$got" "$want"
done

# 4b'. --optimizer adafactor (every tensor on it, one state array): a matrix keeps its factors
#    alone (rows + cols elements of the array), a vector all of it; the example's ledger and the
#    plan from its tensors, by hand (stage 2 on 2 ranks, fp32): the master over each rank's half
#    as above, 4 * (13824 + 96 + 3 * 55920) = 726720, plus the packed array, the most either rank
#    keeps of its half. Embeddings: rank 0 holds wte's factors (256 + 96 = 352), rank 1 wpe's
#    (32 + 96 = 128): 352. ln_f: 96. A block's half on rank 0 holds ln1 (192), qkv_w's factors (288 + 96), qkv_b
#    (288), proj_w's (96 + 96), proj_b, ln2 (96 + 192) and fc_w's (384 + 96), 1824; rank 1's fc_b
#    (384), fcproj_w's factors (96 + 384) and fcproj_b (96), 960. 726720 + 4 * (352 + 96 + 3 *
#    1824) = 750400, where AdamW keeps 2180160.
met=$(mktemp)
"$mpiexec" --oversubscribe -np 2 "$train" --stage 2 "${shape[@]}" --dtype fp32 --steps 1 \
  --optimizer adafactor --lr 1e-2 --eval-every 0 --sample-lines 0 --metrics "$met" >/dev/null 2>&1 || {
  echo "FAIL train_gpt2 --optimizer adafactor"
  fail=1
}
ev=$(grep '"event":"memory","when":"end"' "$met" | head -n1)
rm -f "$met"
check "GPT-2 example --optimizer adafactor: optimizer bytes" \
  "$(field 'd["bytes"]["optimizer"][0]' <<<"$ev")" 750400
check "zshard-plan --optimizer adafactor: optimizer bytes" \
  "$("$plan" --world 2 --stage 2 --device cpu --dtype fp32 "${shape[@]}" --optimizer adafactor \
    --json | field 'd["per_rank"]["optimizer"]')" 750400

# 4c. --ckpt-async: the host staging of one rank's share of an asynchronous save, by hand. 1e6
#    fp32 params in one unit at stage 3 on 2 ranks: each rank's master, m and v shard of 500000
#    elements, 3 x 4 x 500000 = 6000000 bytes; --ckpt-staging-bytes caps it.
for cap in 0:6000000 1000000:1000000; do
  got=$("$plan" --params 1e6 --world 2 --stage 3 --device cpu --dtype fp32 --ckpt-async \
    --ckpt-staging-bytes "${cap%%:*}" --json | field 'd["ckpt_staging"]')
  check "--ckpt-async staging, cap ${cap%%:*}" "$got" "${cap#*:}"
done

# 5. A Hugging Face GPT-2 checkpoint (header only matters; vocab 256 needs no padding) plans as
#    the same shape given by flags: the units of the file are the example's units.
dir=$(mktemp -d)
python3 - "$dir" <<'PY'
import json, struct, sys
C, L, V, P = 96, 3, 256, 32
t = {"wte.weight": [V, C], "wpe.weight": [P, C], "ln_f.weight": [C], "ln_f.bias": [C]}
for l in range(L):
    for k, v in {"ln_1.weight": [C], "ln_1.bias": [C], "attn.c_attn.weight": [C, 3 * C],
                 "attn.c_attn.bias": [3 * C], "attn.c_proj.weight": [C, C],
                 "attn.c_proj.bias": [C], "ln_2.weight": [C], "ln_2.bias": [C],
                 "mlp.c_fc.weight": [C, 4 * C], "mlp.c_fc.bias": [4 * C],
                 "mlp.c_proj.weight": [4 * C, C], "mlp.c_proj.bias": [C]}.items():
        t[f"h.{l}.{k}"] = v
hdr, off = {}, 0
for name, shape in t.items():
    n = 1
    for d in shape:
        n *= d
    hdr[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + 4 * n]}
    off += 4 * n
h = json.dumps(hdr).encode()
with open(sys.argv[1] + "/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + bytes(off))
json.dump({"model_type": "gpt2", "n_layer": L, "n_embd": C, "n_head": 3, "vocab_size": V,
           "n_positions": P}, open(sys.argv[1] + "/config.json", "w"))
PY
st=$("$plan" --safetensors "$dir/model.safetensors" --world 2 --stage 3 --device cpu --seq 32 \
  --batch 3 --json | field 'd["per_rank"]')
flags=$("$plan" "${shape[@]}" --max-seq 32 --world 2 --stage 3 --device cpu --json |
  field 'd["per_rank"]')
check "safetensors = the same GPT-2 shape by flags" "$st" "$flags"
#    The same file with an untied lm_head: its units are not train_gpt2's. The plan says so, and
#    --optimizer muon (the example's grouping needs its tensors) is refused.
python3 - "$dir/model.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
off = max(v["data_offsets"][1] for v in hdr.values())
hdr["lm_head.weight"] = {"dtype": "F32", "shape": [256, 96], "data_offsets": [off, off + 4 * 256 * 96]}
h = json.dumps(hdr).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + bytes(off + 4 * 256 * 96))
PY
out=$("$plan" --safetensors "$dir/model.safetensors" --world 2 --stage 3 --device cpu --json \
  2>&1 >/dev/null)
case $out in *"not the example's"*"planned from their sizes"*) echo "ok   $out" ;;
  *) echo "FAIL: the bare plan of a non-example file is silent: $out"; fail=1 ;; esac
rc=0
out=$("$plan" --safetensors "$dir/model.safetensors" --world 2 --stage 3 --device cpu \
  --optimizer muon 2>&1) || rc=$?
check "--optimizer muon on a non-example file refused (exit 2)" "$rc" 2
case $out in *"plan it with --optimizer adamw"*) echo "ok   $out" ;;
  *) echo "FAIL: $out"; fail=1 ;; esac
rm -rf "$dir"

# 7. Budgeted partial offload. Units of 100, 300, 200, 300 and 50 fp32 elements at stage 3 on 2
#    ranks (no padding): each moves 8 bytes per element to the host (12/2 optimizer + 4/2 param
#    shard): 800, 2400, 1600, 2400, 400. No offload: params 1900 + grads 1900 + optimizer 5700 +
#    buffers (3 gathered x 300 x 4 = 3600, one full gradient 1200, norm bins 2568) 7368 = 16868
#    device bytes; every unit moved: 16868 - 7600 = 9268 (the least budget that fits).
#    Budget 16868: none; 14468 (2400 must go): unit 1 (ties with unit 3: the lower index);
#    14467: units 1 and 3; 10000 (6868 must go: 2400 + 2400 + 1600 = 6400 is short, + 800):
#    units 0-3, their 16 arrays (master, m, v, param shard) a 4 KiB page each in the host arena
#    (one region per array: whole pages) = 65536 bytes on the host; 9268: all; 9267: refused, naming 9268, and 4 ranks (the
#    units pad to 100, 300, 200, 300, 52: grads 952 + the same 7368 of buffers = 8320 fit).
budget() { "$plan" --unit-sizes 100,300,200,300,50 --world 2 --stage 3 --device cpu \
  --device-mem 1G --host-mem 1G --json --offload-budget "$@"; }
check "budget: no offload device bytes" "$("$plan" --unit-sizes 100,300,200,300,50 --world 2 \
  --stage 3 --device cpu --device-mem 1G --host-mem 1G --json | field 'd["per_rank"]["device_total"]')" 16868
for b in "16868 []" "14468 [1]" "14467 [1, 3]" "10000 [0, 1, 2, 3]" "9268 [0, 1, 2, 3, 4]"; do
  check "budget ${b%% *}: host units" "$(budget "${b%% *}" | field 'd["placement"]["host_units"]')" "${b#* }"
done
check "budget 10000: host and device bytes" \
  "$(budget 10000 | field 'd["per_rank"]["host_pinned"], d["per_rank"]["device_total"], d["fits"]')" \
  "65536 9668 True"
check "budget 9267: refused with the least budget" "$(budget 9267 | field 'd["fits"], d["verdict"]')" \
  "False does not fit: needs 9.1 KiB on each rank at stage 3 with 2 ranks with every unit's optimizer state and param shard on the host, over the offload budget of 9.0 KiB; fits with an offload budget of 9.1 KiB (9268 bytes) or more or with 4 ranks"
#    With 16000 bytes of memory even the least budget does not fit (9268 + the host's pages on
#    the CPU device's one pool); at 4 and 8 ranks units still go to the host, each unit's 4 arrays
#    a page there (16384 > 16000); 16 ranks fit: the units pad to 112, 304, 208, 304, 64, shards
#    of 62 elements in all: params 248 + grads 248 + optimizer 744 + buffers (3 x 304 x 4 = 3648,
#    a full gradient 1216, norm bins 2568) 7432 = 8672 device bytes, under 9267 with no unit
#    moved.
check "budget 9267 in 16000 bytes: the least budget does not fit either" \
  "$("$plan" --unit-sizes 100,300,200,300,50 --world 2 --stage 3 --device cpu --device-mem 16000 \
    --host-mem 1G --offload-budget 9267 | tail -1)" \
  "does not fit: needs 9.1 KiB on each rank at stage 3 with 2 ranks with every unit's optimizer state and param shard on the host, over the offload budget of 9.0 KiB; the least budget, 9.1 KiB (9268 bytes), does not fit this memory either; fits with 16 ranks"
check "budget: table names the host units" \
  "$("$plan" --unit-sizes 100,300,200,300,50 --world 2 --stage 3 --device cpu --device-mem 1G \
    --host-mem 1G --offload-budget 14467 | grep '^placement:')" \
  "placement: offload budget 14467 bytes (the least that fits: 9268): 2 of 5 units' optimizer state and param shards on the host: 1 3"
#    --offload-budget free is decided at commit: planned as no budget (16868 device bytes, no unit
#    on the host), saying so; with --free B it is planned as --offload-budget B (B = 14467: units 1
#    and 3, above), and a --free without it is refused.
check "budget free: planned as every unit on the device" \
  "$(budget free | field 'd["placement"]["budget"], d["placement"]["host_units"], d["per_rank"]["device_total"]')" \
  "free [] 16868"
check "budget free: the table says it is decided at commit" \
  "$("$plan" --unit-sizes 100,300,200,300,50 --world 2 --stage 3 --device cpu --device-mem 1G \
    --host-mem 1G --offload-budget free | grep -c '^placement: offload budget free: decided at commit')" 1
check "budget free --free 14467: the placement of budget 14467" \
  "$(budget free --free 14467 | field 'd["placement"]["free_bytes"], d["placement"]["host_units"], d["per_rank"]["device_total"], d["per_rank"]["host_pinned"]')" \
  "14467 [1, 3] $(budget 14467 | field 'd["per_rank"]["device_total"], d["per_rank"]["host_pinned"]' | tr -d '\n')"
check "--free without --offload-budget free is refused" \
  "$("$plan" --unit-sizes 100 --world 2 --free 1000 2>&1 >/dev/null | grep -c 'add that' || true)" 1
# 8. The NVMe tier (--nvme-path, --offload-host-bytes). Units of 100M, 300M, 200M, 300M and 50M
#    fp32 elements at stage 3 on 2 ranks with optimizer offload: host bytes 12 per element of the
#    shard, 600M, 1800M, 1200M, 1800M, 300M = 5700M, each of a unit's 3 arrays (200M, 600M, 400M,
#    600M, 100M bytes) rounded up to 4 KiB pages in the host arena (+3584, +2560, +3072, +2560,
#    +3840 bytes: 46848 in all); the tier's staging is 36 x 4Mi elements = 150994944. Cap 6000M:
#    nothing on disk, host 5700046848. 5000M: unit 1 (ties with unit 3: the lower index), host
#    5700046848 - 1800007680 + staging. 3000M: units 1 and 3, 3600M on disk (the disk holds bytes
#    as they are), host 5700046848 - 3600015360 + staging. 100M: under the staging alone, refused naming 150994944.
nvme() { "$plan" --unit-sizes 100000000,300000000,200000000,300000000,50000000 --world 2 \
  --stage 3 --offload opt --device cpu --device-mem 1T --host-mem 1T --json --nvme-path /mnt/t \
  --offload-host-bytes "$1"; }
for c in "6000000000 0 0 0 5700046848" "5000000000 1 1800000000 150994944 4051034112" \
  "3000000000 2 3600000000 150994944 2251026432"; do
  check "nvme cap ${c%% *}: units, disk, staging, host" \
    "$(nvme "${c%% *}" | field 'd["nvme"]["units"], d["nvme"]["disk_bytes"], d["nvme"]["staging_bytes"], d["per_rank"]["host_pinned"]')" \
    "${c#* }"
done
check "nvme cap 100000000: refused with the least cap" "$(nvme 100000000 | field 'd["fits"], d["verdict"]')" \
  "False does not fit: needs 144.0 MiB of host memory at stage 3 with 2 ranks with every offloaded unit's optimizer state on the NVMe tier, over offload_host_bytes of 95.4 MiB; fits with offload_host_bytes of 150994944 bytes or more"
exit $fail
