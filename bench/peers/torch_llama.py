#!/usr/bin/env python3
"""PyTorch eager peer for bench/train_cpu.sh's train_llama rows: the same Llama (RMSNorm, RoPE
rotate-half, grouped-query causal attention, SwiGLU MLP, untied head) and batch as train_llama,
as plain modules (no transformers), fp32 on the CPU, trained with AdamW (foreach). Prints
    RESULT torch_eager tokens_per_s=<x> ms_per_step=<z> loss=<l>
(mean ms/step after --warmup steps).

  torch_llama.py --layers 4 --hidden 128 --intermediate 352 --heads 4 --kv-heads 2 --vocab 256 \\
      --seq 64 --batch 8 --steps 20 --warmup 3 --threads 1
"""
import argparse
import time

import torch

nn, F = torch.nn, torch.nn.functional


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.w, self.eps = nn.Parameter(torch.ones(C)), eps

    def forward(self, x):
        return self.w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope(x, cos, sin):
    """x [B, H, T, D]; cos, sin [T, D] (the half tables repeated)."""
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin


class Layer(nn.Module):
    def __init__(self, a):
        super().__init__()
        C, D = a.hidden, a.hidden // a.heads
        self.NH, self.NKV, self.D = a.heads, a.kv_heads, D
        self.n1, self.n2 = RMSNorm(C, 1e-5), RMSNorm(C, 1e-5)
        self.q = nn.Linear(C, a.heads * D, bias=False)
        self.k = nn.Linear(C, a.kv_heads * D, bias=False)
        self.v = nn.Linear(C, a.kv_heads * D, bias=False)
        self.o = nn.Linear(a.heads * D, C, bias=False)
        self.gate = nn.Linear(C, a.intermediate, bias=False)
        self.up = nn.Linear(C, a.intermediate, bias=False)
        self.down = nn.Linear(a.intermediate, C, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        h = self.n1(x)
        q = rope(self.q(h).view(B, T, self.NH, self.D).transpose(1, 2), cos, sin)
        k = rope(self.k(h).view(B, T, self.NKV, self.D).transpose(1, 2), cos, sin)
        v = self.v(h).view(B, T, self.NKV, self.D).transpose(1, 2)
        rep = self.NH // self.NKV
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        att = (q @ k.transpose(-2, -1)) / self.D ** 0.5
        y = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        x = x + self.o(y.transpose(1, 2).reshape(B, T, -1))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self, a):
        super().__init__()
        D = a.hidden // a.heads
        self.emb = nn.Embedding(a.vocab, a.hidden)
        self.layers = nn.ModuleList(Layer(a) for _ in range(a.layers))
        self.norm = RMSNorm(a.hidden, 1e-5)
        self.head = nn.Linear(a.hidden, a.vocab, bias=False)
        inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2).float() / D))
        ang = torch.arange(a.seq).float()[:, None] * inv[None, :]
        ang = torch.cat((ang, ang), -1)
        self.register_buffer("cos", ang.cos())
        self.register_buffer("sin", ang.sin())
        self.register_buffer("mask", torch.ones(a.seq, a.seq, dtype=torch.bool).tril())

    def forward(self, tok, tgt):
        x = self.emb(tok)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt.reshape(-1))


def main():
    p = argparse.ArgumentParser()
    for k, v in dict(layers=4, hidden=128, intermediate=352, heads=4, kv_heads=2, vocab=256,
                     seq=64, batch=8, steps=20, warmup=3, threads=1).items():
        p.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Llama(a)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1,
                            foreach=True)
    g = torch.Generator().manual_seed(1)
    times, loss = [], 0.0
    for i in range(a.warmup + a.steps):
        tok = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=g)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        l = model(tok[:, :-1], tok[:, 1:])
        l.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
        loss = l.item()
    ms = 1e3 * sum(times) / len(times)
    print("RESULT torch_eager tokens_per_s=%.0f ms_per_step=%.1f loss=%.3f"
          % (a.batch * a.seq / (ms / 1e3), ms, loss))


if __name__ == "__main__":
    main()
