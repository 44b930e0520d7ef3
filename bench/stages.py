#!/usr/bin/env python3
"""The stage-comparison benchmark: the GPT-2 example (build/examples/train_gpt2) under stages 0-3
x offload {none, opt, opt+params} x world {1, 2, 4}; for each, rank 0's peak bytes by category
from the engine's ledger (the --metrics memory event at the end) and the example's activation
bytes, beside zshard-plan's prediction (--json) and the ZeRO paper's model-state formula.

Prints one table, writes a CSV and an SVG (stacked bars per configuration, one colour per
category: measured left, predicted right). Last line:
  stages: <k> configurations, max |predicted - measured| = <x>%
where x is the largest difference of the total peak (device + host, activations included) over
the configurations that ran; model-state categories must match exactly (the script exits 1 when
they do not, or when a total differs by more than --max-total-pct).

Usage: bench/stages.py [--build DIR] [--out DIR] [--worlds 1,2,4] [--device cpu|cuda]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

CATS = ["params", "grads", "optimizer", "buffers", "activations", "host_pinned"]
COLOURS = {"params": "#4e79a7", "grads": "#f28e2b", "optimizer": "#e15759",
           "buffers": "#76b7b2", "activations": "#59a14f", "host_pinned": "#b07aa1"}
OFFLOADS = ["none", "opt", "opt+params"]
# The model: small enough for 2 cores, with every kind of unit (embedding, blocks, ln_f) and
# activations larger than the model states, as in real training.
SHAPE = ["--layers", "4", "--channels", "128", "--heads", "4", "--vocab", "256", "--seq", "64",
         "--batch", "4"]


def env():
    e = dict(os.environ)
    e.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_btl_vader_single_copy_mechanism="none",
             OMPI_MCA_rmaps_base_oversubscribe="1", OPENBLAS_NUM_THREADS="1")
    return e


def valid(stage, off):
    """The plan refuses offload without sharding: the optimizer offload needs stage >= 1, params
    offload needs stage 3 (src/shard/plan.c, zs_plan_make)."""
    if off == "opt":
        return stage >= 1
    if off == "opt+params":
        return stage == 3
    return True


def measure(build, world, stage, off, device):
    """Rank 0's ledger peaks and the example's activation bytes."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as met:
        cmd = ["mpirun", "--oversubscribe", "-np", str(world),
               os.path.join(build, "examples", "train_gpt2"), "--stage", str(stage),
               "--offload", off, "--device", device, "--steps", "2", "--eval-every", "0",
               "--sample-lines", "0", "--log-every", "0", "--metrics", met.name] + SHAPE
        r = subprocess.run(cmd, env=env(), capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("stages: train_gpt2 failed:\n" + " ".join(cmd) + "\n" + r.stdout + r.stderr)
        ev = [json.loads(l) for l in open(met.name) if '"event":"memory"' in l][-1]
    m = {c: ev["bytes"][c][1] for c in CATS if c != "activations"}
    m["activations"] = ev["activations"]
    m["total"] = ev["bytes"]["total"][1] + ev["activations"]  # the ledger's own total peak
    return m


def predict(build, world, stage, off, device):
    cmd = [os.path.join(build, "tools", "zshard-plan"), "--json", "--world", str(world),
           "--stage", str(stage), "--offload", off, "--device", device] + SHAPE
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("stages: zshard-plan failed:\n" + " ".join(cmd) + "\n" + r.stderr)
    p = json.loads(r.stdout)["per_rank"]
    p["total"] = p["device_total"] + p["host_total"]
    return p


def zero_states(psi, world, stage, b=4, k=12):
    """The ZeRO paper's model states per device (params and grads b bytes, K = 12 optimizer bytes
    per parameter), psi unpadded: stage 0 (2b+K)psi, 1: 2b psi + K psi/N, 2: b psi + (b+K)psi/N,
    3: (2b+K)psi/N. Offload moves bytes, it does not change their sum."""
    n = world
    return [(2 * b + k) * psi, 2 * b * psi + k * psi / n, b * psi + (b + k) * psi / n,
            (2 * b + k) * psi / n][stage]


def psi_of(build):
    r = subprocess.run([os.path.join(build, "tools", "zshard-plan"), "--json",
                        "--model-states-only", "--device", "cpu"] + SHAPE,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["psi"]


def svg(rows, path):
    """Stacked bars: for each configuration a measured (solid, left) and a predicted (faded,
    right) bar, model states at the bottom (host_pinned where the offloaded state went), then
    buffers and activations; one group per world size."""
    order = ["params", "grads", "optimizer", "host_pinned", "buffers", "activations"]
    step, bw, gap = 36, 13, 2
    W, H, top, left, bottom = 40 + step * len(rows), 440, 60, 70, 120
    peak = max(max(r["meas"]["total"], r["pred"]["total"]) for r in rows)
    scale = (H - top - bottom) / peak
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W + left}" height="{H}" '
           f'font-family="sans-serif" font-size="10">',
           f'<rect width="{W + left}" height="{H}" fill="white"/>',
           f'<text x="{left}" y="16" font-size="13">Per-rank peak memory (MiB), GPT-2 example '
           f'L=4 C=128 B=4 T=64 fp32, CPU device: measured (solid) vs predicted (faded)</text>']
    for i in range(0, 6):
        v = peak * i / 5
        y = H - bottom - v * scale
        out.append(f'<line x1="{left}" x2="{W + left}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 4}" y="{y + 3:.1f}" text-anchor="end">'
                   f'{v / 2**20:.1f}</text>')
    prev = None
    for i, r in enumerate(rows):
        x0 = left + 10 + step * i
        if r["world"] != prev:
            if prev is not None:
                out.append(f'<line x1="{x0 - 6}" x2="{x0 - 6}" y1="{top}" y2="{H - bottom}" '
                           f'stroke="#999"/>')
            out.append(f'<text x="{x0}" y="{top - 4}" font-size="11">{r["world"]} '
                       f'rank{"s" if r["world"] > 1 else ""}</text>')
            prev = r["world"]
        for j, key in enumerate(["meas", "pred"]):
            y = H - bottom
            for c in order:
                h = r[key][c] * scale
                if h > 0:
                    op = "1" if key == "meas" else "0.55"
                    out.append(f'<rect x="{x0 + (bw + gap) * j}" y="{y - h:.1f}" width="{bw}" '
                               f'height="{h:.1f}" fill="{COLOURS[c]}" fill-opacity="{op}"/>')
                y -= h
        lx, ly = x0 + bw, H - bottom + 6
        out.append(f'<text x="{lx}" y="{ly}" transform="rotate(60 {lx} {ly})">'
                   f'stage {r["stage"]} {r["offload"]}</text>')
    for k, c in enumerate(order):
        out.append(f'<rect x="{left + 110 * k}" y="26" width="10" height="10" '
                   f'fill="{COLOURS[c]}"/><text x="{left + 110 * k + 14}" y="35">{c}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--build", default=os.path.join(here, "..", "build"))
    ap.add_argument("--out", default=".")
    ap.add_argument("--worlds", default="1,2,4")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-total-pct", type=float, default=1.0)
    a = ap.parse_args()
    psi = psi_of(a.build)
    rows, refused = [], []
    for world in [int(w) for w in a.worlds.split(",")]:
        for stage in range(4):
            for off in OFFLOADS:
                label = f"N{world} s{stage} {off}"
                if not valid(stage, off):
                    refused.append(label)
                    continue
                meas = measure(a.build, world, stage, off, a.device)
                pred = predict(a.build, world, stage, off, a.device)
                states_m = sum(meas[c] for c in ("params", "grads", "optimizer", "host_pinned"))
                rows.append(dict(label=label, world=world, stage=stage, offload=off, meas=meas,
                                 pred=pred, zero=zero_states(psi, world, stage),
                                 states=states_m,
                                 states_exact=all(meas[c] == pred[c] for c in
                                                  ("params", "grads", "optimizer",
                                                   "host_pinned", "activations")),
                                 pct=100.0 * (pred["total"] - meas["total"]) / meas["total"]))
    mib = 2.0**20
    print(f"GPT-2 example {' '.join(SHAPE)}, fp32, {a.device} device, psi = {psi}; MiB per rank "
          "(rank 0), peaks from the ledger; pred = zshard-plan --json; ZeRO = the paper's model "
          "states (unpadded); total = ledger total peak + activations")
    hdr = (f"{'configuration':<18} {'params':>7} {'grads':>7} {'optim':>7} {'host':>7} "
           f"{'buf meas':>8} {'buf pred':>8} {'acts':>7} {'states':>7} {'ZeRO':>7} "
           f"{'states=':>7} {'tot meas':>8} {'tot pred':>8} {'diff %':>7}")
    print(hdr)
    for r in rows:
        m, p = r["meas"], r["pred"]
        print(f"{r['label']:<18} {m['params'] / mib:7.3f} {m['grads'] / mib:7.3f} "
              f"{m['optimizer'] / mib:7.3f} {m['host_pinned'] / mib:7.3f} "
              f"{m['buffers'] / mib:8.3f} {p['buffers'] / mib:8.3f} "
              f"{m['activations'] / mib:7.3f} {r['states'] / mib:7.3f} {r['zero'] / mib:7.3f} "
              f"{'exact' if r['states_exact'] else 'DIFF':>7} {m['total'] / mib:8.3f} "
              f"{p['total'] / mib:8.3f} {r['pct']:7.3f}")
    for label in refused:
        print(f"{label:<18} refused by the plan (offload needs sharding: opt at stage >= 1, "
              "params at stage 3)")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "stages.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["world", "stage", "offload"] + [f"meas_{c}" for c in CATS] + ["meas_total"] +
                   [f"pred_{c}" for c in CATS] + ["pred_total", "zero_states", "total_diff_pct"])
        for r in rows:
            w.writerow([r["world"], r["stage"], r["offload"]] + [r["meas"][c] for c in CATS] +
                       [r["meas"]["total"]] + [r["pred"][c] for c in CATS] +
                       [r["pred"]["total"], int(round(r["zero"])), f"{r['pct']:.4f}"])
    svg(rows, os.path.join(a.out, "stages.svg"))
    worst = max(abs(r["pct"]) for r in rows)
    bad = [r["label"] for r in rows if not r["states_exact"]]
    if bad:
        print("model states or activations differ from the prediction: " + ", ".join(bad))
    print(f"wrote {os.path.join(a.out, 'stages.csv')} and {os.path.join(a.out, 'stages.svg')}")
    print(f"stages: {len(rows)} configurations, max |predicted - measured| = {worst:.3f}%")
    return 1 if bad or worst > a.max_total_pct else 0


if __name__ == "__main__":
    sys.exit(main())
