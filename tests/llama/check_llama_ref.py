#!/usr/bin/env python3
"""Checks a run of tests/llama/reference/llama_ref.py (used by test_llama_ref.sh):

  check_llama_ref.py OUT

  1. the loss at init is about ln(vocab) (transformers' small random init: |loss - ln V| < 0.05)
     and the float64 loss equals transformers' labels=input_ids loss to 1e-6 relative
  2. OUT/init, loaded afresh by from_pretrained, gives that loss on OUT/tokens.bin's first batch
  3. OUT/final equals the weights of an independent loop: the same gradients (torch autograd on
     the same batches) with AdamW written out here (bias-corrected moments, decoupled decay
     lr * wd * w on matrices and embeddings only, global-norm clipping as
     clip_grad_norm_), in float64, to 1e-6 (the file is float32)
  4. the per-step losses of that loop equal OUT/losses.json's
Exit 0 when all hold."""
import json
import math
import os
import sys

import numpy as np
import torch
import transformers

CLS = {"llama": transformers.LlamaForCausalLM, "qwen2": transformers.Qwen2ForCausalLM,
       "mistral": transformers.MistralForCausalLM}


def main(out):
    transformers.logging.set_verbosity_error()
    meta = json.load(open(os.path.join(out, "meta.json")))
    L = json.load(open(os.path.join(out, "losses.json")))
    V = meta["vocab"]
    tok = np.fromfile(os.path.join(out, "tokens.bin"), dtype=np.int32).reshape(meta["tokens_shape"])
    fails = []
    if abs(L["init_loss"] - math.log(V)) > 0.05:
        fails.append("init loss %.6f is not about ln V = %.6f" % (L["init_loss"], math.log(V)))
    if abs(L["init_loss"] - L["init_loss_hf"]) > 1e-6 * L["init_loss_hf"]:
        fails.append("float64 loss %.9f vs transformers' %.9f" % (L["init_loss"], L["init_loss_hf"]))
    cls = CLS[meta["model_type"]]
    m = cls.from_pretrained(os.path.join(out, "init"), attn_implementation="eager",
                            torch_dtype=torch.float32).double()
    ids = torch.from_numpy(tok[0].astype(np.int64))
    with torch.no_grad():
        l0 = m(input_ids=ids, labels=ids).loss.item()
    if abs(l0 - L["init_loss_hf"]) > 1e-6 * l0:
        fails.append("OUT/init reloaded: loss %.9f, the run said %.9f" % (l0, L["init_loss_hf"]))
    # The independent loop: torch's gradients, AdamW by hand.
    lr, b1, b2, eps, wd = meta["lr"], meta["beta1"], meta["beta2"], meta["eps"], meta["weight_decay"]
    clip = meta["grad_clip"]
    names = [n for n, _ in m.named_parameters()]
    params = dict(m.named_parameters())
    mom = {n: torch.zeros_like(p) for n, p in params.items()}
    vel = {n: torch.zeros_like(p) for n, p in params.items()}
    losses = []
    for t in range(1, meta["steps"] + 1):
        ids = torch.from_numpy(tok[t - 1].astype(np.int64))
        m.zero_grad(set_to_none=True)
        h = m.model(input_ids=ids).last_hidden_state
        logits = m.lm_head(h)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
        loss.backward()
        losses.append(loss.item())
        with torch.no_grad():
            g = {n: params[n].grad.clone() for n in names}
            if clip > 0:
                norm = math.sqrt(sum(float((x * x).sum()) for x in g.values()))
                scale = min(1.0, clip / (norm + 1e-6))
                g = {n: x * scale for n, x in g.items()}
            for n in names:
                p = params[n]
                decay = 0.0 if (n.endswith(".bias") or n.endswith("norm.weight")) else wd
                mom[n] = b1 * mom[n] + (1 - b1) * g[n]
                vel[n] = b2 * vel[n] + (1 - b2) * g[n] * g[n]
                mh = mom[n] / (1 - b1 ** t)
                vh = vel[n] / (1 - b2 ** t)
                p.mul_(1 - lr * decay)
                p.sub_(lr * mh / (vh.sqrt() + eps))
    for i, (a, b) in enumerate(zip(losses, L["losses"])):
        if abs(a - b) > 1e-9 * abs(b):
            fails.append("step %d loss: independent loop %.12f, run %.12f" % (i, a, b))
    final = cls.from_pretrained(os.path.join(out, "final"), torch_dtype=torch.float32)
    fsd = final.state_dict()
    worst = 0.0
    for n in names:
        d = (fsd[n].double() - params[n].detach()).abs().max().item()
        worst = max(worst, d)
        if d > 1e-6:
            fails.append("%s: final weights differ by %g" % (n, d))
    moved = max((fsd[n].double() - p0).abs().max().item() for n, p0 in
                ((n, cls.from_pretrained(os.path.join(out, "init")).state_dict()[n].double())
                 for n in names[:1]))
    if moved < 0.5 * lr:
        fails.append("the weights did not move (%g)" % moved)
    for f in fails:
        print("FAIL", f)
    if not fails:
        print("ok   %s: init loss %.6f (ln V %.6f), %d steps: losses and final weights equal an "
              "independent AdamW loop (max |dw| %.2g)" % (meta["model_type"], L["init_loss"],
                                                         math.log(V), meta["steps"], worst))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
