#!/usr/bin/env python3
"""PyTorch peer for bench/train_throughput.sh: the same GPT-2 (pre-norm, tied LM head, tanh GELU,
padded vocabulary) and batch as train_gpt2, trained a few steps with AdamW, eager and
torch.compile. Prints one line per mode:
    RESULT <mode> tokens_per_s=<x> mfu=<y> ms_per_step=<z>
or a SKIP line (exit 0) when torch (with CUDA, unless --device cpu) is not available.
--device cpu runs the same loop in fp32 on the CPU (AdamW foreach), for CPU comparisons with a
free shape (--layers --heads --channels --vocab) and --threads.

  torch_gpt2.py --model d12 --batch 8 --seq 1024 --steps 30 --dtype bf16 --modes eager,compile
"""
import argparse
import math
import sys
import time

PRESETS = {"d12": (12, 12, 768), "d24": (24, 16, 1024), "d36": (36, 20, 1280),
           "d48": (48, 25, 1600)}


def build(torch, L, NH, C, Vp, T):
    """GPT-2 as plain modules (no HF dependency)."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            B, T_, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = [z.view(B, T_, NH, C // NH).transpose(1, 2) for z in (q, k, v)]
            if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0: flash attention
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) / math.sqrt(C // NH)
                mask = torch.ones(T_, T_, dtype=torch.bool, device=x.device).tril()
                y = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
            x = x + self.proj(y.transpose(1, 2).reshape(B, T_, C))
            return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(Vp, C), nn.Embedding(T, C)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.lnf = nn.LayerNorm(C)

        def forward(self, idx, tgt):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for b in self.blocks:
                x = b(x)
            logits = self.lnf(x) @ self.wte.weight.T  # tied head
            return F.cross_entropy(logits.float().view(-1, Vp), tgt.view(-1))

    model = GPT()
    with torch.no_grad():  # GPT-2 init, as train_gpt2 (the residual scaling is irrelevant here)
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="d12", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--heads", type=int, default=0)
    ap.add_argument("--channels", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    cpu = a.device == "cpu"
    try:
        import torch
    except ImportError:
        print("SKIP torch peer: PyTorch is not installed")
        return 0
    if not cpu and not torch.cuda.is_available():
        print("SKIP torch peer: PyTorch %s has no CUDA device" % torch.__version__)
        return 0
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    L, NH, C = PRESETS[a.model]
    L, NH, C = a.layers or L, a.heads or NH, a.channels or C
    V, T, B = a.vocab, a.seq, a.batch
    Vp = (V + 63) // 64 * 64 if V < 50257 else 50304
    n_params = Vp * C + 1024 * C + L * (12 * C * C + 13 * C) + 2 * C
    flops_per_token = 6 * n_params + 6 * L * C * T
    dev = torch.device(a.device)
    sync = (lambda: None) if cpu else torch.cuda.synchronize
    g = torch.Generator(device=dev).manual_seed(0)
    idx = torch.randint(0, V, (B, T), device=dev, generator=g)
    tgt = torch.randint(0, V, (B, T), device=dev, generator=g)
    for mode in a.modes.split(","):
        torch.manual_seed(0)
        model = build(torch, L, NH, C, Vp, max(T, 1024)).to(dev)
        kw = {"foreach": True} if cpu else {"fused": True}
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1,
                                **kw)
        step_fn = model
        if mode == "compile":
            if not hasattr(torch, "compile"):
                print("SKIP torch compile: torch %s has no torch.compile" % torch.__version__)
                continue
            step_fn = torch.compile(model)
        if cpu:
            import contextlib
            ctx = contextlib.nullcontext()
        else:
            ctx = torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.dtype == "bf16")
        times = []
        for s in range(a.warmup + a.steps):
            sync()
            t0 = time.perf_counter()
            with ctx:
                loss = step_fn(idx, tgt)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            sync()
            if s >= a.warmup:
                times.append(time.perf_counter() - t0)
        dt = sum(times) / len(times)
        tps = B * T / dt
        mfu = flops_per_token * tps / (a.peak_tflops * 1e12)
        print("RESULT torch_%s tokens_per_s=%.0f mfu=%.4f ms_per_step=%.1f loss=%.3f"
              % (mode, tps, mfu, 1e3 * dt, loss.item()))
        sys.stdout.flush()
        del model, opt, step_fn
        if not cpu:
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
