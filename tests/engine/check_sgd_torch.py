#!/usr/bin/env python3
"""Cross-checks zshard's SGD (zs_config.optimizer = ZS_OPT_SGD) against PyTorch's torch.optim.SGD,
independently of test_engine_train.c's own reference. For momentum 0.9 dampening 0.1, momentum 0.9
nesterov, and momentum 0 unclipped, it runs test_engine_train --sgd ... --write FILE on one rank
and trains engine_model.h's model (its splitmix64 data reproduced here) in float64 torch: an
nn.Parameter per tensor, param groups with weight decay WD and 0 (no_weight_decay), grads = the
mean over the step's micro-batches of a_bi * (p_i - t_bi), clip_grad_norm_ (max_norm / (norm +
1e-6), at most 1, as the engine), SGD.step(). Pass: max |engine - torch| / max(1, |torch|) <= TOL.
Usage: check_sgd_torch.py [--numpy] TEST_ENGINE_TRAIN_BINARY MPIEXEC. Exit 0 pass, 1 fail, 77 with
"SKIP: no torch". --numpy: a plain float64 transcription of torch.optim.SGD (no torch or numpy).
"""
import array
import math
import os
import struct
import subprocess
import sys
import tempfile

M64 = (1 << 64) - 1
# engine_model.h's tensors in global order: (name, shape, no_weight_decay)
TENSORS = [("embed.w", (7, 5), 0), ("embed.b", (3,), 1), ("tiny.s", (1,), 0),
           ("block.w", (13, 3), 0), ("block.ln", (2,), 1), ("block.c", (11,), 0),
           ("head.w", (257,), 0)]
NUMEL = [math.prod(s) for _, s, _ in TENSORS]
N = sum(NUMEL)
LR, WD, STEPS, MICRO, TOL = 0.05, 0.1, 6, 2, 2e-5
CONFIGS = [dict(momentum=0.9, dampening=0.1, nesterov=0, clip=0.5),  # clipped at every step
           dict(momentum=0.9, dampening=0.0, nesterov=1, clip=0.5),
           dict(momentum=0.0, dampening=0.0, nesterov=0, clip=0.0)]  # no clipping


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def tm_hash(x):
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def tm_unif(a, b):
    return (tm_hash(((a * 0x100000001b3) & M64) ^ tm_hash(b)) >> 11) * (1.0 / 9007199254740992.0)


def tm_init(i):
    return f32(tm_unif(7, i) * 2.0 - 1.0)


def batch(b):  # (a_b, t_b) over every global index, float32-valued as engine_model.h makes them
    return ([f32(0.5 + tm_unif(b * 2 + 100, i)) for i in range(N)],
            [f32(tm_unif(b * 2 + 101, i) * 2.0 - 1.0) for i in range(N)])


def train_torch(momentum, dampening, nesterov, clip):
    import torch
    ps, base = [], 0
    for (_, shape, _), n in zip(TENSORS, NUMEL):
        init = torch.tensor([tm_init(base + i) for i in range(n)], dtype=torch.float64)
        ps.append(torch.nn.Parameter(init.reshape(shape)))
        base += n
    groups = [{"params": [p for p, t in zip(ps, TENSORS) if not t[2]], "weight_decay": WD},
              {"params": [p for p, t in zip(ps, TENSORS) if t[2]], "weight_decay": 0.0}]
    opt = torch.optim.SGD(groups, lr=LR, momentum=momentum, dampening=dampening,
                          nesterov=bool(nesterov))
    for s in range(STEPS):
        grads = [torch.zeros(p.shape, dtype=torch.float64) for p in ps]
        for b in range(s * MICRO, (s + 1) * MICRO):  # one rank: batches s*MICRO + m
            a, t = (torch.tensor(v, dtype=torch.float64) for v in batch(b))
            base = 0
            for p, g, n in zip(ps, grads, NUMEL):
                sl = slice(base, base + n)
                g += (a[sl] * (p.detach().reshape(-1) - t[sl])).reshape(p.shape)
                base += n
        for p, g in zip(ps, grads):
            p.grad = g / MICRO
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(ps, clip)
        opt.step()
    return [float(x) for p in ps for x in p.detach().reshape(-1)]


def train_plain(momentum, dampening, nesterov, clip):
    p = [tm_init(i) for i in range(N)]
    wd = [0.0 if t[2] else WD for t, n in zip(TENSORS, NUMEL) for _ in range(n)]
    buf = None
    for s in range(STEPS):
        g = [0.0] * N
        for b in range(s * MICRO, (s + 1) * MICRO):
            a, t = batch(b)
            g = [gi + ai * (pi - ti) for gi, ai, pi, ti in zip(g, a, p, t)]
        g = [gi / MICRO for gi in g]
        norm = math.sqrt(sum(gi * gi for gi in g))
        c = clip / (norm + 1e-6) if clip > 0 and norm > clip else 1.0
        d = [gi * c + w * pi for gi, w, pi in zip(g, wd, p)]
        if momentum != 0:
            buf = d if buf is None else [momentum * u + (1 - dampening) * v for u, v in zip(buf, d)]
            d = [v + momentum * u for v, u in zip(d, buf)] if nesterov else buf
        p = [pi - LR * di for pi, di in zip(p, d)]
    return p


def run_engine(binary, mpiexec, cfg, path):
    cmd = [mpiexec, "--oversubscribe", "-np", "1", binary, "--stage", "3", "--micro", str(MICRO),
           "--steps", str(STEPS), "--lr", str(LR), "--wd", str(WD), "--clip", str(cfg["clip"]),
           "--sgd", str(cfg["momentum"]), "--dampening", str(cfg["dampening"]),
           "--nesterov", str(cfg["nesterov"]), "--write", path]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        print("FAIL: %s exited %d:\n%s" % (" ".join(cmd), r.returncode, r.stdout[-4000:]))
        return None
    vals = array.array("f")  # the engine's float32 params, global element order
    with open(path, "rb") as f:
        vals.frombytes(f.read())
    return list(vals) if len(vals) == N else print("FAIL: %d floats, not %d" % (len(vals), N))


def main(argv):
    plain = "--numpy" in argv
    args = [a for a in argv if a != "--numpy"]
    if len(args) != 2:
        print("usage: check_sgd_torch.py [--numpy] TEST_ENGINE_TRAIN_BINARY MPIEXEC")
        return 2
    if not plain:
        try:
            __import__("torch")
        except ImportError:
            print("SKIP: no torch")
            return 77
    ok, name = True, "plain float64" if plain else "torch.optim.SGD"
    with tempfile.TemporaryDirectory() as tmp:
        for k, cfg in enumerate(CONFIGS):
            engine = run_engine(args[0], args[1], cfg, os.path.join(tmp, "params%d.bin" % k))
            if engine is None:
                ok = False
                continue
            ref = (train_plain if plain else train_torch)(**cfg)
            worst, wi = max((abs(e - r) / max(1.0, abs(r)), i)
                            for i, (e, r) in enumerate(zip(engine, ref)))
            ok &= worst <= TOL
            print("%s: %s vs %s: worst %.3g at element %d (engine %.9g, reference %.9g)" %
                  ("ok" if worst <= TOL else "FAIL", cfg, name, worst, wi, engine[wi], ref[wi]))
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
