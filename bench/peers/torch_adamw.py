#!/usr/bin/python3
"""Peer for bench/cpu_adamw.c: torch.optim.AdamW(foreach=True) on the CPU, same sizes and threads.

One fp32 parameter of n elements with an fp32 gradient; lr 1e-3, betas (0.9, 0.999), eps 1e-8,
weight decay 0.01. Bytes are counted as in cpu_adamw.c (read p, m, v, g; write p, m, v: 28 B per
element), whatever temporaries torch makes. Best of --reps steps after one warm-up step.
Writes CSV rows kind,isa,n,threads,seconds,params_per_s,GBps (kind "torch", isa "foreach").

Usage: /usr/bin/python3 bench/peers/torch_adamw.py --sizes 1e6,1e7,1e8 --threads 1,2 --csv out.csv
"""
import argparse
import sys
import time

import torch


def bench(n, threads, reps):
    """Best seconds per optimizer step for n parameters on `threads` threads."""
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    p = torch.nn.Parameter(torch.rand(n, generator=gen))
    p.grad = torch.rand(n, generator=gen)
    opt = torch.optim.AdamW([p], lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                            foreach=True)
    best = float("inf")
    for r in range(reps + 1):
        t0 = time.perf_counter()
        opt.step()
        dt = time.perf_counter() - t0
        if r > 0:
            best = min(best, dt)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--csv", default=None)
    a = ap.parse_args()
    sizes = [int(float(s)) for s in a.sizes.split(",") if s]
    threads = [int(t) for t in a.threads.split(",") if t]
    out = open(a.csv, "w") if a.csv else None
    if out:
        out.write("kind,isa,n,threads,seconds,params_per_s,GBps\n")
    print(f"torch {torch.__version__}: AdamW(foreach=True), fp32", file=sys.stderr)
    for n in sizes:
        for t in threads:
            sec = bench(n, t, max(1, a.reps))
            gbps = 28.0 * n / sec / 1e9
            print(f"torch        foreach {n:11d} {t:3d}  {sec * 1e3:10.4f} ms  "
                  f"{n / sec / 1e9:8.3f} Gparam/s  {gbps:7.2f} GB/s")
            if out:
                out.write(f"torch,foreach,{n},{t},{sec:.9f},{n / sec:.6e},{gbps:.4f}\n")
                out.flush()
    if out:
        out.close()


if __name__ == "__main__":
    main()
