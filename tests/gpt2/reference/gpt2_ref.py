#!/usr/bin/env python3
"""PyTorch reference for examples/train_gpt2 (fp64 autograd), used by tests/gpt2/test_gpt2_ref.sh.

  gpt2_ref.py check DIR [--tol 1e-4] [--safetensors FILE]
      DIR holds what `train_gpt2 --dump-grads DIR` wrote (see examples/gpt2/dump.h): the weights,
      and for every rank its micro-batch, logits, per-token losses and gradients. Recomputes all
      of them with PyTorch and compares: max|c - ref| <= tol * max|ref| per tensor. The tied
      embedding is checked twice: the LM head's share of the wte gradient alone, and the total
      (lookup + head). With --safetensors, the C side's loaded weights must also equal the file's
      tensors (Conv1D weights transposed, wte padded with zero rows).
  gpt2_ref.py write-safetensors FILE --layers L --channels C --vocab V --positions P [--seed S]
      Writes a random GPT-2 in Hugging Face layout/names (Conv1D weights [in, out]); most tensors
      F32, wpe BF16 and ln_f.bias F16 so the loader's conversions are exercised too.
Exit status 0 when everything matches, 1 otherwise.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

BLOCK_TENSORS = ["ln1_w", "ln1_b", "qkv_w", "qkv_b", "proj_w", "proj_b",
                 "ln2_w", "ln2_b", "fc_w", "fc_b", "fcproj_w", "fcproj_b"]
HF_BLOCK = {"ln1_w": "ln_1.weight", "ln1_b": "ln_1.bias", "qkv_w": "attn.c_attn.weight",
            "qkv_b": "attn.c_attn.bias", "proj_w": "attn.c_proj.weight",
            "proj_b": "attn.c_proj.bias", "ln2_w": "ln_2.weight", "ln2_b": "ln_2.bias",
            "fc_w": "mlp.c_fc.weight", "fc_b": "mlp.c_fc.bias", "fcproj_w": "mlp.c_proj.weight",
            "fcproj_b": "mlp.c_proj.bias"}
CONV1D = {"qkv_w", "proj_w", "fc_w", "fcproj_w"}


def shapes(meta):
    """Our tensor shapes by (unit, tensor) name."""
    C, L = meta["channels"], meta["layers"]
    out = {("embedding", "wte"): (meta["padded_vocab"], C),
           ("embedding", "wpe"): (meta["max_seq"], C),
           ("ln_f", "lnf_w"): (C,), ("ln_f", "lnf_b"): (C,)}
    blk = {"ln1_w": (C,), "ln1_b": (C,), "qkv_w": (3 * C, C), "qkv_b": (3 * C,),
           "proj_w": (C, C), "proj_b": (C,), "ln2_w": (C,), "ln2_b": (C,),
           "fc_w": (4 * C, C), "fc_b": (4 * C,), "fcproj_w": (C, 4 * C), "fcproj_b": (C,)}
    for l in range(L):
        for t, s in blk.items():
            out[("block.%d" % l, t)] = s
    return out


def load(path, dtype, shape):
    a = np.fromfile(path, dtype=dtype)
    n = int(np.prod(shape))
    if a.size != n:
        raise SystemExit("%s: %d values, expected %d" % (path, a.size, n))
    return a.reshape(shape)


def forward(torch, W, meta, tok, tgt):
    """GPT-2 forward in fp64. The head uses a separate leaf (wte_head) holding the same values
    as wte, so autograd yields the lookup's and the head's shares of the wte gradient apart."""
    F = torch.nn.functional
    L, C, NH = meta["layers"], meta["channels"], meta["heads"]
    V = meta["vocab"]
    B, T = tok.shape
    hs = C // NH
    x = W[("embedding", "wte")][tok] + W[("embedding", "wpe")][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        p = lambda t: W[("block.%d" % l, t)]
        h = F.layer_norm(x, (C,), p("ln1_w"), p("ln1_b"), 1e-5)
        qkv = h @ p("qkv_w").T + p("qkv_b")
        q, k, v = qkv.split(C, dim=2)
        q, k, v = [z.view(B, T, NH, hs).transpose(1, 2) for z in (q, k, v)]
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p("proj_w").T + p("proj_b")
        h = F.layer_norm(x, (C,), p("ln2_w"), p("ln2_b"), 1e-5)
        h = F.gelu(h @ p("fc_w").T + p("fc_b"), approximate="tanh")
        x = x + h @ p("fcproj_w").T + p("fcproj_b")
    x = F.layer_norm(x, (C,), W[("ln_f", "lnf_w")], W[("ln_f", "lnf_b")], 1e-5)
    logits = x @ W["wte_head"].T
    losses = F.cross_entropy(logits[..., :V].reshape(B * T, V), tgt.reshape(-1), reduction="none")
    return logits, losses


class Checker:
    """Counts comparisons; max|c - ref| <= tol * max|ref| per tensor."""

    def __init__(self, tol):
        self.tol, self.passed, self.failed = tol, 0, 0

    def cmp(self, name, c, ref):
        ref = np.asarray(ref, dtype=np.float64)
        c = np.asarray(c, dtype=np.float64).reshape(ref.shape)
        scale = max(float(np.abs(ref).max()), 1e-30)
        err = float(np.abs(c - ref).max()) / scale
        ok = err <= self.tol and np.all(np.isfinite(c))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("MISMATCH %-32s rel err %.3e (max|ref| %.3e)" % (name, err, scale))
        return err


def st_read(path):
    """Minimal safetensors reader (numpy): name -> float64 array."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        hdr = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, e in hdr.items():
        if k == "__metadata__":
            continue
        raw = data[e["data_offsets"][0]:e["data_offsets"][1]]
        if e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif e["dtype"] == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif e["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            a = u.view(np.float32).astype(np.float64)
        else:
            raise SystemExit("unexpected dtype " + e["dtype"])
        out[k] = a.reshape(e["shape"])
    return out


def check_loaded_weights(chk, W, meta, st_path):
    """The C side's weights after --init-safetensors must be the file's values exactly."""
    st = st_read(st_path)
    for (unit, t), w in W.items():
        if unit == "embedding":
            ref = np.zeros(w.shape)
            src = st[t + ".weight"]
            ref[:src.shape[0]] = src
        elif unit == "ln_f":
            ref = st["ln_f." + ("weight" if t == "lnf_w" else "bias")]
        else:
            ref = st["h.%s.%s" % (unit.split(".")[1], HF_BLOCK[t])]
            if t in CONV1D:
                ref = ref.T
        if not np.array_equal(np.asarray(w, dtype=np.float64), ref):
            chk.failed += 1
            print("MISMATCH loaded weight %s.%s differs from the safetensors file" % (unit, t))
        else:
            chk.passed += 1


def check(args):
    import torch
    torch.set_grad_enabled(True)
    d = args.dir
    meta = json.load(open(os.path.join(d, "meta.json")))
    shp = shapes(meta)
    W = {}
    for key, s in shp.items():
        W[key] = load(os.path.join(d, "w.%s.%s.f32" % key), "<f4", s)
    chk = Checker(args.tol)
    if args.safetensors:
        check_loaded_weights(chk, W, meta, args.safetensors)
    B, T, V, Vp = meta["B"], meta["T"], meta["vocab"], meta["padded_vocab"]
    for r in range(meta["world"]):
        tok = torch.from_numpy(load(os.path.join(d, "r%d.tok.i32" % r), "<i4", (B, T)).astype(np.int64))
        tgt = torch.from_numpy(load(os.path.join(d, "r%d.tgt.i32" % r), "<i4", (B, T)).astype(np.int64))
        TW = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in W.items()}
        TW["wte_head"] = torch.tensor(W[("embedding", "wte")], dtype=torch.float64,
                                      requires_grad=True)
        logits, losses = forward(torch, TW, meta, tok, tgt)
        losses.mean().backward()
        c_logits = load(os.path.join(d, "r%d.logits.f32" % r), "<f4", (B, T, Vp))
        chk.cmp("r%d logits" % r, c_logits[..., :V], logits[..., :V].detach().numpy())
        c_losses = load(os.path.join(d, "r%d.losses.f32" % r), "<f4", (B * T,))
        chk.cmp("r%d losses" % r, c_losses, losses.detach().numpy())
        chk.cmp("r%d mean loss" % r, [c_losses.astype(np.float64).mean()], [losses.mean().item()])
        head = TW["wte_head"].grad.numpy()
        c_head = load(os.path.join(d, "r%d.grad_head.wte.f32" % r), "<f4", head.shape)
        chk.cmp("r%d wte grad, LM head share" % r, c_head, head)
        worst = 0.0
        for key, s in shp.items():
            ref = TW[key].grad.numpy()
            if key == ("embedding", "wte"):
                ref = ref + head  # tied: lookup share + head share land in one gradient
            c = load(os.path.join(d, "r%d.grad.%s.%s.f32" % ((r,) + key)), "<f4", s)
            worst = max(worst, chk.cmp("r%d grad %s.%s" % ((r,) + key), c, ref))
        print("rank %d: loss C %.6f torch %.6f | worst gradient rel err %.2e over %d tensors"
              % (r, c_losses.astype(np.float64).mean(), losses.mean().item(), worst, len(shp)))
    print("gpt2_ref: %d passed, %d failed" % (chk.passed, chk.failed))
    return 0 if chk.failed == 0 and chk.passed > 0 else 1


def write_safetensors(args):
    """Random GPT-2 in HF layout. Values are rounded to each entry's dtype before writing."""
    rng = np.random.default_rng(args.seed)
    C, L, V, P = args.channels, args.layers, args.vocab, args.positions
    t = {"wte.weight": rng.normal(0, 0.02, (V, C)), "wpe.weight": rng.normal(0, 0.02, (P, C)),
         "ln_f.weight": 1 + rng.normal(0, 0.1, (C,)), "ln_f.bias": rng.normal(0, 0.1, (C,))}
    hf = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (C, 3 * C),
          "attn.c_attn.bias": (3 * C,), "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,),
          "ln_2.weight": (C,), "ln_2.bias": (C,), "mlp.c_fc.weight": (C, 4 * C),
          "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (4 * C, C), "mlp.c_proj.bias": (C,)}
    for l in range(L):
        for n, s in hf.items():
            base = 1.0 if n.endswith("ln_1.weight") or n.endswith("ln_2.weight") else 0.0
            t["h.%d.%s" % (l, n)] = base + rng.normal(0, 0.1 if len(s) == 1 else 0.05, s)
    dtypes = {"wpe.weight": "BF16", "ln_f.bias": "F16"}
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(t):
        dt = dtypes.get(name, "F32")
        a = t[name].astype(np.float32)
        if dt == "F32":
            raw = a.astype("<f4").tobytes()
        elif dt == "F16":
            raw = a.astype("<f2").tobytes()
        else:
            u = a.view(np.uint32)
            u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")  # round to nearest even
            raw = u.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(args.file, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    print("wrote %s (%d tensors)" % (args.file, len(t)))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("dir")
    c.add_argument("--tol", type=float, default=1e-4)
    c.add_argument("--safetensors")
    w = sub.add_parser("write-safetensors")
    w.add_argument("file")
    w.add_argument("--layers", type=int, required=True)
    w.add_argument("--channels", type=int, required=True)
    w.add_argument("--vocab", type=int, required=True)
    w.add_argument("--positions", type=int, required=True)
    w.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    return check(a) if a.cmd == "check" else write_safetensors(a)


if __name__ == "__main__":
    sys.exit(main())
