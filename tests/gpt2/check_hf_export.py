"""Checks train_gpt2's Hugging Face export with the libraries themselves.

  check_hf_export.py check DIR LOGITS [--tol 1e-5]
      DIR/model.safetensors loads with the safetensors library (every GPT-2 name, fp32, the shapes
      HF uses: Conv1D weights [in, out], wte [vocab, C]); GPT2LMHeadModel.from_pretrained(DIR)
      loads it with nothing unexpected and nothing missing but the tied head and attention-mask
      buffers; its logits on the tokens in LOGITS (written by train_gpt2 --dump-logits) equal
      zshard's to --tol relative (to the largest logit).
  check_hf_export.py untie SRC DST
      Writes SRC's tensors plus an lm_head.weight that is not wte (to test that loading refuses it).
"""
import argparse
import sys

import numpy as np


def read_logits(path):
    raw = np.fromfile(path, dtype=np.int32, count=2)
    T, V = int(raw[0]), int(raw[1])
    tok = np.fromfile(path, dtype=np.int32, count=T, offset=8)
    logits = np.fromfile(path, dtype=np.float32, count=T * V, offset=8 + 4 * T).reshape(T, V)
    return tok, logits


def check(a):
    import torch
    from safetensors.numpy import load_file
    from transformers import GPT2LMHeadModel

    st = load_file(a.dir + "/model.safetensors")
    model, info = GPT2LMHeadModel.from_pretrained(a.dir, output_loading_info=True)
    cfg = model.config
    L, C, V = cfg.n_layer, cfg.n_embd, cfg.vocab_size
    want = {"wte.weight": (V, C), "wpe.weight": (cfg.n_positions, C),
            "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for l in range(L):
        p = "h.%d." % l
        want.update({p + "ln_1.weight": (C,), p + "ln_1.bias": (C,), p + "ln_2.weight": (C,),
                     p + "ln_2.bias": (C,), p + "attn.c_attn.weight": (C, 3 * C),
                     p + "attn.c_attn.bias": (3 * C,), p + "attn.c_proj.weight": (C, C),
                     p + "attn.c_proj.bias": (C,), p + "mlp.c_fc.weight": (C, 4 * C),
                     p + "mlp.c_fc.bias": (4 * C,), p + "mlp.c_proj.weight": (4 * C, C),
                     p + "mlp.c_proj.bias": (C,)})
    bad = 0
    if set(st) != set(want):
        print("FAIL names: missing %s, extra %s" % (sorted(set(want) - set(st))[:5],
                                                   sorted(set(st) - set(want))[:5]))
        bad += 1
    for k, shape in want.items():
        if k in st and (st[k].shape != shape or st[k].dtype != np.float32):
            print("FAIL %s: %s %s, want %s float32" % (k, st[k].shape, st[k].dtype, shape))
            bad += 1
    missing = [k for k in info["missing_keys"]
               if not (k == "lm_head.weight" or k.endswith(".attn.bias") or k.endswith(".attn.masked_bias"))]
    if missing or info["unexpected_keys"] or info["mismatched_keys"]:
        print("FAIL from_pretrained: missing %s unexpected %s mismatched %s"
              % (missing, info["unexpected_keys"], info["mismatched_keys"]))
        bad += 1
    tok, ours = read_logits(a.logits)
    model.eval()
    with torch.no_grad():
        hf = model(torch.tensor(tok, dtype=torch.long)[None]).logits[0].numpy()
    scale = max(1.0, float(np.abs(hf).max()))
    err = float(np.abs(hf[:, :V] - ours).max()) / scale
    print("logits: %d tokens x %d vocab, max |hf - zshard| / max|logit| = %.3g (tol %g)"
          % (ours.shape[0], ours.shape[1], err, a.tol))
    if not err <= a.tol:
        bad += 1
    print("check_hf_export: %s" % ("FAIL" if bad else "ok"))
    return 1 if bad else 0


def untie(a):
    from safetensors.numpy import load_file, save_file
    st = load_file(a.src)
    st["lm_head.weight"] = st["wte.weight"] + np.float32(0.5)
    save_file(st, a.dst, metadata={"format": "pt"})
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("logits")
    c.add_argument("--tol", type=float, default=1e-5)
    u = sub.add_parser("untie")
    u.add_argument("src")
    u.add_argument("dst")
    a = p.parse_args()
    return check(a) if a.cmd == "check" else untie(a)


if __name__ == "__main__":
    sys.exit(main())
