#!/usr/bin/env python3
"""Hugging Face reference for the Llama example (examples/train_llama, later): the loss at init and
N steps of torch.optim.AdamW on given token batches, with transformers' own LlamaForCausalLM /
Qwen2ForCausalLM / MistralForCausalLM (attn_implementation="eager").

  llama_ref.py run OUT (--arch llama|qwen2|llama3 | --config FILE.json) [--seed S]
                 [--tokens FILE | --batch B --seq T] [--steps N] [--lr F] [--beta1 F] [--beta2 F]
                 [--eps F] [--weight-decay F] [--grad-clip F] [--compute float64|float32]

  The model is built from the configuration with torch.manual_seed(S) (transformers' own init:
  normal(0, initializer_range) weights, zero biases, unit RMSNorm weights) in float32, and saved
  as OUT/init (save_pretrained, safetensors, float32, config.json): the C side loads exactly these
  weights. The computation then runs in --compute precision (float64 by default: the reference
  is more accurate than the code it checks).
  Batches: step i uses batch i, B sequences of T + 1 tokens (int32 [N, B, T+1] in --tokens, or
  drawn uniformly from the vocabulary with numpy's default_rng(S)); the model gets all T + 1 as
  input_ids, and the loss is labels=input_ids's: the mean over the B*T next-token predictions,
  as a training step over T inputs and T targets computes it. OUT/tokens.bin holds the batches.
  Step i: loss on batch i (before the update), backward, torch.nn.utils.clip_grad_norm_ (when
  --grad-clip > 0), AdamW step with constant lr; weight decay applies to every matrix and the
  embedding, not to RMSNorm weights and biases (the example's no_weight_decay flags,
  examples/common/llama_layout.h). OUT/losses.json: {"init_loss", "init_loss_hf" (the same through
  transformers' labels=input_ids path, whose logits are float32), "losses": [per step],
  "final_loss" (after the last update, on the last batch)}. The losses are computed with the
  head and cross-entropy in --compute precision (transformers' RoPE tables stay float32); OUT/final: the weights after N steps (float32);
  OUT/meta.json: the arguments.

Presets (--arch): llama: vocab 128, hidden 64, intermediate 96, 2 layers, 4 query / 2 key-value
heads, untied; qwen2: the same shape with q/k/v biases and a tied head; llama3: llama's shape
with rope_theta 5e5 and "llama3" RoPE scaling (factor 8, low/high 1/4, original 64 positions:
every branch of the scaling at head_dim 16). --config takes any
Llama / Qwen2 / Mistral config.json instead.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import transformers

CLASSES = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
           "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM),
           "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM)}


def preset(arch):
    shape = dict(vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                 rms_norm_eps=1e-5, rope_theta=10000.0, initializer_range=0.02)
    if arch == "llama3":
        # Llama 3.1's RoPE: theta 5e5 and "llama3" frequency scaling. head_dim 16 gives 8
        # frequencies with wavelengths 2 pi 5e5^(i/8) = 6.3, 32.4, 167, ...; with
        # original_max_position_embeddings 64 the high-frequency bound is 64 / 4 = 16 and the
        # low one 64 / 1 = 64, so i = 0 is kept, i = 1 takes the smooth blend and i >= 2 are
        # divided by the factor: every branch of the scaling (transformers wants the original
        # positions below max_position_embeddings, hence 128).
        shape.update(rope_theta=500000.0, head_dim=16, max_position_embeddings=128,
                     rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 64})
        arch = "llama"
    return {"model_type": arch, "tie_word_embeddings": arch == "qwen2", **shape}


def build_config(a):
    if a.config:
        with open(a.config) as f:
            d = json.load(f)
    else:
        d = preset(a.arch)
    mt = d.get("model_type")
    if mt not in CLASSES:
        raise SystemExit("model_type %r: llama, qwen2 or mistral" % mt)
    d = {k: v for k, v in d.items() if k != "model_type"}
    cfg = CLASSES[mt][0](**d)
    cfg._attn_implementation = "eager"
    return mt, cfg


def no_decay(name):
    """RMSNorm weights and biases: exempt from weight decay (as the example's layout)."""
    return name.endswith(".bias") or name.endswith("norm.weight")


def hf_loss(model, tok):
    """transformers' own loss: labels=input_ids (it casts the logits to float32)."""
    ids = torch.from_numpy(tok.astype(np.int64))
    return model(input_ids=ids, labels=ids).loss


def loss_of(model, tok):
    """The same loss with the head and cross-entropy in the model's precision (float64 keeps
    float64; transformers' forward would cast the logits to float32). RoPE's cos/sin are still
    float32 inside transformers, so float64 runs are accurate to about 1e-7 relative."""
    ids = torch.from_numpy(tok.astype(np.int64))
    h = model.model(input_ids=ids).last_hidden_state
    logits = model.lm_head(h)
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))


def cmd_run(a):
    mt, cfg = build_config(a)
    torch.manual_seed(a.seed)
    model = CLASSES[mt][1](cfg)
    model.eval()  # no dropout (attention_dropout is 0 anyway)
    os.makedirs(a.out, exist_ok=True)
    model.save_pretrained(os.path.join(a.out, "init"), safe_serialization=True)
    V = cfg.vocab_size
    if a.tokens:
        tok = np.fromfile(a.tokens, dtype=np.int32)
        per = a.batch * (a.seq + 1)
        if tok.size < per * max(a.steps, 1):
            raise SystemExit("%s: %d tokens, need %d" % (a.tokens, tok.size, per * max(a.steps, 1)))
        tok = tok[:per * max(a.steps, 1)].reshape(max(a.steps, 1), a.batch, a.seq + 1)
    else:
        rng = np.random.default_rng(a.seed)
        tok = rng.integers(0, V, size=(max(a.steps, 1), a.batch, a.seq + 1), dtype=np.int32)
    if tok.min() < 0 or tok.max() >= V:
        raise SystemExit("token ids outside the vocabulary 0..%d" % (V - 1))
    tok.tofile(os.path.join(a.out, "tokens.bin"))
    dt = {"float64": torch.float64, "float32": torch.float32}[a.compute]
    model = model.to(dt)
    decay = [p for n, p in model.named_parameters() if not no_decay(n)]
    nodecay = [p for n, p in model.named_parameters() if no_decay(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": nodecay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)
    with torch.no_grad():
        init_loss = loss_of(model, tok[0]).item()
        init_loss_hf = hf_loss(model, tok[0]).item()
    losses = []
    for i in range(a.steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(model, tok[i])
        loss.backward()
        if a.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        final_loss = loss_of(model, tok[max(a.steps, 1) - 1]).item()
    model.to(torch.float32).save_pretrained(os.path.join(a.out, "final"), safe_serialization=True)
    with open(os.path.join(a.out, "losses.json"), "w") as f:
        json.dump({"init_loss": init_loss, "init_loss_hf": init_loss_hf, "losses": losses, "final_loss": final_loss}, f, indent=1)
    meta = dict(vars(a), model_type=mt, vocab=V, tokens_shape=list(tok.shape))
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("%s: init loss %.6f (ln V = %.6f), %d AdamW steps, final loss %.6f" % (
        mt, init_loss, math.log(V), a.steps, final_loss))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    g = r.add_mutually_exclusive_group(required=True)
    g.add_argument("--arch", choices=sorted(CLASSES) + ["llama3"])
    g.add_argument("--config")
    r.add_argument("--seed", type=int, default=1234)
    r.add_argument("--tokens")
    r.add_argument("--batch", type=int, default=2)
    r.add_argument("--seq", type=int, default=16)
    r.add_argument("--steps", type=int, default=5)
    r.add_argument("--lr", type=float, default=1e-3)
    r.add_argument("--beta1", type=float, default=0.9)
    r.add_argument("--beta2", type=float, default=0.95)
    r.add_argument("--eps", type=float, default=1e-8)
    r.add_argument("--weight-decay", type=float, default=0.1)
    r.add_argument("--grad-clip", type=float, default=0.0)
    r.add_argument("--compute", choices=["float64", "float32"], default="float64")
    a = p.parse_args()
    transformers.logging.set_verbosity_error()
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
