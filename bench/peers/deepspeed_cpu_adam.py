#!/usr/bin/python3
"""Peer for bench/cpu_adamw.c: DeepSpeed's CPUAdam (csrc/adam/cpu_adam_impl.cpp, the optimizer of
ZeRO-Offload) on the CPU, same sizes and threads, built from DeepSpeed's own sources.

DeepSpeed's op is a torch C++ extension: this script compiles csrc/adam/cpu_adam.cpp and
cpu_adam_impl.cpp of the source tree given by --ds-src (an unpacked DeepSpeed sdist; the
benchmark script fetches one with `pip download deepspeed --no-deps --no-binary :all:`) with
torch.utils.cpp_extension.load, using the flags of DeepSpeed's CPUAdamBuilder (-O3 -march=native
-fopenmp and -D__AVX512__ or -D__AVX256__ as the CPU has), into --build-dir. It needs torch's C++
headers and pybind11 (Debian: libtorch-dev, pybind11-dev). Threads are OpenMP threads
(torch.set_num_threads sets them).

Rows, all with adamw_mode on, lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01, bias
correction, best of --reps steps after one warm-up step:
  ds_fp32  fp32 params, grads, exp_avg, exp_avg_sq (DeepSpeed's ZeRO-Offload setting: its fp32
           params are the master): read p, g, m, v, write p, m, v = 28 B per element.
  ds_bf16  bf16 params, grads and state (DeepSpeed's (BFloat16, BFloat16) invoker: no master,
           round-to-nearest): 14 B per element.
DeepSpeed has no fp32-params + bf16-state invoker, so no row matches zshard's bf16 moments
exactly. Writes CSV rows kind,isa,n,threads,seconds,params_per_s,GBps (isa "ds-<simd>").

Usage: /usr/bin/python3 bench/peers/deepspeed_cpu_adam.py --ds-src DIR --build-dir DIR
         --sizes 1e6,1e7 --threads 1,2 --csv out.csv
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.cpp_extension import load


def simd_flag():
    """DeepSpeed's CPUOpBuilder.simd_width(): AVX-512 when the CPU has it, else AVX2."""
    flags = open("/proc/cpuinfo").read()
    if " avx512f " in flags or " avx512f\n" in flags:
        return "-D__AVX512__", "avx512"
    if " avx2 " in flags:
        return "-D__AVX256__", "avx2"
    return None, "scalar"


def build(src, build_dir):
    """Compiles DeepSpeed's cpu_adam op (see the module docstring) and returns the module."""
    flag, name = simd_flag()
    cflags = ["-O3", "-std=c++17", "-g", "-Wno-reorder", "-march=native", "-fopenmp"]
    if flag:
        cflags.append(flag)
    os.makedirs(build_dir, exist_ok=True)
    inc = [os.path.join(src, "csrc", "includes")]
    if os.path.isdir("/usr/include/torch/csrc/api/include"):  # Debian's libtorch-dev
        inc.append("/usr/include/torch/csrc/api/include")
    mod = load(name="ds_cpu_adam_peer",
               sources=[os.path.join(src, "csrc", "adam", f) for f in ("cpu_adam.cpp",
                                                                      "cpu_adam_impl.cpp")],
               extra_include_paths=inc, extra_cflags=cflags, extra_ldflags=["-fopenmp"],
               build_directory=build_dir, verbose=False)
    return mod, name


def bench(mod, n, threads, reps, dtype):
    """Best seconds per step of DeepSpeed's CPUAdam on n elements of dtype."""
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    p = torch.rand(n, generator=gen).to(dtype)
    g = torch.rand(n, generator=gen).to(dtype)
    m = torch.rand(n, generator=gen).to(dtype) * 1e-3
    v = torch.rand(n, generator=gen).to(dtype) * 1e-3
    mod.create_adam(0, 1e-3, 0.9, 0.999, 1e-8, 0.01, True, False)
    best = float("inf")
    for r in range(reps + 1):
        t0 = time.perf_counter()
        mod.adam_update(0, r + 1, 1e-3, 0.9, 0.999, 1e-8, 0.01, True, p, g, m, v)
        dt = time.perf_counter() - t0
        if r > 0:
            best = min(best, dt)
    mod.destroy_adam(0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ds-src", required=True, help="an unpacked DeepSpeed source tree")
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--sizes", default="1e6,1e7,1e8")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--csv", default=None)
    a = ap.parse_args()
    t0 = time.time()
    mod, simd = build(a.ds_src, a.build_dir)
    print(f"DeepSpeed CPUAdam from {a.ds_src} ({simd}), built/loaded in {time.time() - t0:.0f} s, "
          f"torch {torch.__version__}", file=sys.stderr)
    sizes = [int(float(s)) for s in a.sizes.split(",") if s]
    threads = [int(t) for t in a.threads.split(",") if t]
    out = open(a.csv, "w") if a.csv else None
    if out:
        out.write("kind,isa,n,threads,seconds,params_per_s,GBps\n")
    for n in sizes:
        for t in threads:
            for kind, dtype, bytes_per in (("ds_fp32", torch.float32, 28.0),
                                           ("ds_bf16", torch.bfloat16, 14.0)):
                sec = bench(mod, n, t, max(1, a.reps), dtype)
                gbps = bytes_per * n / sec / 1e9
                print(f"{kind:13s} ds-{simd:4s} {n:11d} {t:3d}  {sec * 1e3:10.4f} ms  "
                      f"{n / sec / 1e9:8.3f} Gparam/s  {gbps:7.2f} GB/s")
                if out:
                    out.write(f"{kind},ds-{simd},{n},{t},{sec:.9f},{n / sec:.6e},{gbps:.4f}\n")
                    out.flush()
    if out:
        out.close()


if __name__ == "__main__":
    main()
