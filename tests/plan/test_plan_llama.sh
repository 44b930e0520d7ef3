#!/usr/bin/env bash
# zshard-plan's Llama-family models (tools/plan/llama.c, examples/llama/):
#   1. each preset's parameter count equals the model's published total (model cards / the
#      safetensors index of meta-llama/Meta-Llama-3-8B, -70B, mistralai/Mistral-7B-v0.1,
#      Qwen/Qwen2.5-7B, -14B, -32B)
#   2. --model config.json with the published config.json text (every field, as on the hub) plans
#      exactly as the preset, with activations, with and without recompute
#   3. recompute saves (L - 1) layers' saved activations, worked out here from the formula in
#      examples/common/llama_activations.h for Llama-3 8B at B=1, T=4096, bf16
#   4. refusals: a sequence longer than Mistral's sliding window (with and without activations),
#      an unknown preset, a MoE config; a Llama 3.1 config.json (eos_token_id list) accepted
#   5. --tp 2: one tp rank's parameters, recompute's saving and --recommend's tp traffic, worked
#      out here (the heads, the MLP, the embedding and head halved, the norms whole); a tp that
#      does not divide the heads or the world, and --tp for a model train_llama does not split,
#      refused
# Usage: test_plan_llama.sh ZSHARD_PLAN
set -uo pipefail
plan=$1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
check() { # name got want
  if [ "$2" != "$3" ]; then
    echo "FAIL $1:"; echo "  got:  $2"; echo "  want: $3"; fail=1
  else
    echo "ok   $1"
  fi
}
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# 1. published totals
for p in llama3-8b:8030261248 llama3-70b:70553706496 mistral-7b:7241732096 \
         qwen2.5-7b:7615616512 qwen2.5-14b:14770033664 qwen2.5-32b:32763876352; do
  got=$("$plan" --model "${p%%:*}" --model-states-only --json | field 'd["psi"]')
  check "${p%%:*} parameters" "$got" "${p##*:}"
done

# 2. the published config.json files
cat >"$W/llama3-8b.json" <<'J'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
 "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
 "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 8192,
 "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
 "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
 "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size": 128256}
J
cat >"$W/llama3-70b.json" <<'J'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
 "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 8192,
 "initializer_range": 0.02, "intermediate_size": 28672, "max_position_embeddings": 8192,
 "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80,
 "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
 "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size": 128256}
J
cat >"$W/mistral-7b.json" <<'J'
{"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
 "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
 "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
 "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
 "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
 "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0",
 "use_cache": true, "vocab_size": 32000}
J
qwen() { # hidden intermediate layers heads kv rms_eps
  cat <<J
{"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
 "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": $1, "initializer_range": 0.02,
 "intermediate_size": $2, "max_position_embeddings": 131072, "max_window_layers": $3,
 "model_type": "qwen2", "num_attention_heads": $4, "num_hidden_layers": $3,
 "num_key_value_heads": $5, "rms_norm_eps": $6, "rope_theta": 1000000.0,
 "sliding_window": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
 "transformers_version": "4.43.1", "use_cache": true, "use_sliding_window": false,
 "vocab_size": 152064}
J
}
qwen 3584 18944 28 28 4 1e-06 >"$W/qwen2.5-7b.json"
qwen 5120 13824 48 40 8 1e-05 >"$W/qwen2.5-14b.json"
qwen 5120 27648 64 40 8 1e-05 >"$W/qwen2.5-32b.json"
# Llama 3.1 8B as published: a list of eos ids and llama3 RoPE scaling; the same parameters
cat >"$W/llama3.1-8b.json" <<'J'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
 "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
 "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
 "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
 "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
 "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 8.0,
 "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
 "rope_type": "llama3"}, "rope_theta": 500000.0, "tie_word_embeddings": false,
 "torch_dtype": "bfloat16", "transformers_version": "4.43.0.dev0", "use_cache": true,
 "vocab_size": 128256}
J
got=$("$plan" --model "$W/llama3.1-8b.json" --model-states-only --json | field 'd["psi"]')
check "llama3.1-8b config.json (eos_token_id list) parameters" "$got" 8030261248
# GPU runs (--device cuda): on the CPU device bf16 params compute in fp32 (examples/common/widen.h).
cfg="--device cuda --world 8 --stage 3 --dtype bf16 --device-mem 80G --host-mem 128G --batch 1 --seq 4096 --json"
for p in llama3-8b llama3-70b mistral-7b qwen2.5-7b qwen2.5-14b qwen2.5-32b; do
  for rc in "" --recompute; do
    want=$("$plan" --model $p $cfg $rc)
    got=$("$plan" --model "$W/$p.json" $cfg $rc)
    check "$p: --model config.json = preset ${rc:-(no recompute)}" "$got" "$want"
  done
done

# 3. recompute: (L - 1) sets of one layer's saved activations. Llama-3 8B, N = 4096 tokens, bf16:
#    N (3C + 2Q + 2KV + 3I) 2 + 2 N 4 + N NH 4 with C = Q = 4096, KV = 1024, I = 14336
#    = 4096 (12288 + 8192 + 2048 + 43008) 2 + 32768 + 524288 = 536870912 + 557056 = 537427968;
#    31 of them = 16660267008 bytes.
a0=$("$plan" --model llama3-8b $cfg | field 'd["per_rank"]["activations"]')
a1=$("$plan" --model llama3-8b $cfg --recompute | field 'd["per_rank"]["activations"]')
check "llama3-8b: recompute saves 31 layers' activations" "$((a0 - a1))" 16660267008

# 4. refusals
out=$("$plan" --model mistral-7b --seq 8192 2>&1)
check "mistral-7b --seq 8192 refused (exit 2)" "$?" 2
case $out in *"sliding window (4096 tokens)"*) echo "ok   sliding window named: $out" ;;
  *) echo "FAIL sliding window refusal: $out"; fail=1 ;; esac
# also where no activations are planned (the config is checked at --seq as train_llama does)
out=$("$plan" --model mistral-7b --seq 8192 --model-states-only 2>&1)
check "mistral-7b --seq 8192 --model-states-only refused (exit 2)" "$?" 2
case $out in *"sliding window (4096 tokens)"*) echo "ok   sliding window named: $out" ;;
  *) echo "FAIL sliding window refusal (states only): $out"; fail=1 ;; esac
out=$("$plan" --model llama-9b 2>&1)
check "unknown preset refused (exit 2)" "$?" 2
case $out in *"qwen2.5-7b"*) echo "ok   names the presets" ;; *) echo "FAIL: $out"; fail=1 ;; esac
echo '{"model_type": "mixtral", "num_local_experts": 8}' >"$W/moe.json"
out=$("$plan" --model "$W/moe.json" 2>&1)
check "mixtral config refused (exit 2)" "$?" 2
case $out in *'model_type "mixtral" is not supported'*) echo "ok   $out" ;;
  *) echo "FAIL mixtral: $out"; fail=1 ;; esac

# 5. tensor parallelism. Llama-3 8B's 8030261248 parameters: embedding and head 2 V C =
#    1050673152 split over the vocabulary (128256 rows, even at tp 2 and 16: 525336576 a rank at
#    tp 2), the final norm C = 4096 and 32 layers' norms 2 C each = 262144 stay whole; the other
#    6979321856 halve: 525336576 + 4096 + 262144 + 3489660928 = 4015263744 per tp rank.
got=$("$plan" --model llama3-8b --world 2 --tp 2 --model-states-only --json | field 'd["psi"]')
check "llama3-8b --tp 2: one tp rank's parameters" "$got" 4015263744
#    --vocab-parallel 0 (train_llama's flag): the embedding and head whole, 1050673152 a rank:
#    1050673152 + 4096 + 262144 + 3489660928 = 4540600320.
got=$("$plan" --model llama3-8b --world 2 --tp 2 --vocab-parallel 0 --model-states-only --json |
  field 'd["psi"]')
check "llama3-8b --tp 2 --vocab-parallel 0: the embedding and head whole" "$got" 4540600320
#    --tp 16 over 8 kv heads: k/v whole on every rank. A layer: q 2 heads (256 x 4096) and o
#    (4096 x 256) 1048576 each, k and v 1024 x 4096 = 4194304 each, gate/up/down 896 x 4096 =
#    3670016 each, norms 8192: 21504000; 32 layers 688128000, plus the embedding's and head's
#    8016 rows (2 x 8016 x 4096 = 65667072) and the final norm 4096 = 753799168.
got=$("$plan" --model llama3-8b --world 16 --tp 16 --model-states-only --json | field 'd["psi"]')
check "llama3-8b --tp 16: one tp rank's parameters, k/v whole" "$got" 753799168
#    --sp at tp 8 (seq 4096, bf16: N = 4096 tokens, Nl = 512 a rank): 3584 fewer rows of each
#    layer's res2 and rstd (3584 (8192 + 8) x 32 = 940441600), of the residual stream
#    (33 x 3584 x 8192 = 968884224), the final norm's rstd (3584 x 4 = 14336; its output is every
#    token's either way: the vocabulary-parallel head reads them all, as it does the logits,
#    4096 x 16032 columns) and the residual gradient (29360128), less the staging buffer
#    (4096 x 8192 = 33554432): 1905145856 bytes.
sp="--model llama3-8b --world 8 --tp 8 --device cuda --dtype bf16 --batch 1 --seq 4096
    --device-mem 80G --host-mem 1T --json"
a0=$("$plan" $sp | field 'd["per_rank"]["activations"]')
a1=$("$plan" $sp --sp | field 'd["per_rank"]["activations"]')
check "llama3-8b --tp 8 --sp: sequence parallelism's saving" "$((a0 - a1))" 1905145856
#    recompute at tp 2: 31 layers of N (3C + 2Q/2 + 2KV/2 + 3I/2) 2 + 2 N 4 + N (NH/2) 4
#    = 31 (4096 (12288 + 4096 + 1024 + 21504) 2 + 32768 + 262144) = 9890922496 bytes.
a0=$("$plan" --model llama3-8b $cfg --tp 2 | field 'd["per_rank"]["activations"]')
a1=$("$plan" --model llama3-8b $cfg --tp 2 --recompute | field 'd["per_rank"]["activations"]')
check "llama3-8b --tp 2: recompute saves 31 layers' activations" "$((a0 - a1))" 9890922496
#    --recommend at tp 2 x dp 1: no ZeRO traffic, only the tp sums: 32 layers x 4 all-reduces of
#    4096 tokens x 4096 x 2 bytes and 2 for the vocabulary-parallel embedding and head, a ring
#    moving 2 (2 - 1) / 2 of each (130 x 33554432 bytes), and the loss parts' all-gather (3 x 4096
#    x 4 bytes from the other rank: 49152), at 100 GB/s = 0.0436213 s; 6 all-reduces a layer with
#    --recompute (194 x 33554432 + 49152 bytes): 0.0650961 s.
rec="--model llama3-8b --world 2 --tp 2 --device cuda --dtype bf16 --device-mem 80G --host-mem 1T
     --batch 1 --seq 4096 --recommend --json"
got=$("$plan" $rec | field 'd["recommend"][0]["step_comm_seconds"]')
check "llama3-8b --tp 2 --recommend: the tp sums' seconds" "$got" 0.0436213
got=$("$plan" $rec --recompute | field 'd["recommend"][0]["step_comm_seconds"]')
check "llama3-8b --tp 2 --recommend --recompute: 6 sums a layer" "$got" 0.0650961
for bad in "--model llama3-8b --world 3 --tp 3:splits the attention heads (32)" \
           "--model llama3-8b --world 8 --tp 3:--tp 3 does not divide --world 8" \
           "--model d12 --world 2 --tp 2:planned for Llama-family models" \
           "--model llama3-8b --world 2 --sp:give --tp 2 or more" \
           "--model llama3-8b --world 2 --tp 2 --vocab-parallel 2:bad value '2' for --vocab-parallel" \
           "--model llama3-8b --world 4 --tp 4 --sp --seq 4098:not a multiple of it"; do
  out=$("$plan" ${bad%%:*} 2>&1)
  check "${bad%%:*} refused (exit 2)" "$?" 2
  case $out in *"${bad#*:}"*) echo "ok   $out" ;; *) echo "FAIL ${bad%%:*}: $out"; fail=1 ;; esac
done
exit $fail
