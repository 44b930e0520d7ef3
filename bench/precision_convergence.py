#!/usr/bin/env python3
"""Validation-loss curves of the GPT-2 demo per optimizer-state mode (bench/precision_convergence.sh
runs the training; this reads its metrics files). Standard library only: the SVG is written by
hand (no matplotlib), as bench/stages.py does.

Reads DIR/<mode>.jsonl for each mode named (train_gpt2 --metrics: lines {"step": s,
"val_loss": x}), writes DIR/convergence.csv (step, one column per mode) and DIR/convergence.svg
(one line per mode), and prints per mode the final validation loss and its difference from the
reference mode (the first named), then the last line
  convergence: worst |final val loss - <ref>| = <x>% (goal <= 1%) over <k> modes
Exits 1 when a mode has no validation loss or the worst difference exceeds --max-pct.

Usage: bench/precision_convergence.py --dir DIR --modes fp32_states,master_params,...
         [--max-pct 1.0] [--title TEXT]
"""
import argparse
import csv
import json
import os
import sys

COLOURS = ["#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2", "#edc948"]
DASHES = ["", "6,4", "2,3", "8,3,2,3", "", "4,2"]


def curve(path):
    """{step: val_loss} from a train_gpt2 metrics file."""
    out = {}
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if "val_loss" in e:
                out[int(e["step"])] = float(e["val_loss"])
    return out


def svg(curves, path, title):
    """Line chart of the curves (mode -> {step: loss}) into path."""
    W, H, L, R, T, B = 720, 420, 70, 190, 40, 50
    steps = sorted({s for c in curves.values() for s in c})
    ys = [v for c in curves.values() for v in c.values()]
    x0, x1 = min(steps), max(steps)
    y0, y1 = min(ys), max(ys)
    pad = (y1 - y0) * 0.05 or 0.1
    y0, y1 = y0 - pad, y1 + pad

    def px(s):
        return L + (s - x0) / max(1, x1 - x0) * (W - L - R)

    def py(v):
        return T + (y1 - v) / (y1 - y0) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    for k in range(6):  # horizontal grid and y labels
        v = y0 + (y1 - y0) * k / 5
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                   f'stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.3f}</text>')
    for s in steps:
        out.append(f'<text x="{px(s):.1f}" y="{H - B + 16}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">step</text>')
    out.append(f'<text x="16" y="{(T + H - B) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(T + H - B) / 2})">validation loss (nats)</text>')
    out.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" '
               f'stroke="#888"/>')
    for i, (mode, c) in enumerate(curves.items()):
        col, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        pts = " ".join(f"{px(s):.1f},{py(c[s]):.1f}" for s in sorted(c))
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{col}" stroke-width="2"'
                   f'{extra}/>')
        ly = T + 16 + 18 * i
        out.append(f'<line x1="{W - R + 12}" x2="{W - R + 40}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{col}" stroke-width="2"{extra}/>')
        out.append(f'<text x="{W - R + 46}" y="{ly}">{mode}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--modes", required=True, help="comma-separated; the first is the reference")
    ap.add_argument("--max-pct", type=float, default=1.0)
    ap.add_argument("--title", default="GPT-2 demo: validation loss per optimizer-state mode")
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    curves = {}
    for m in modes:
        c = curve(os.path.join(a.dir, m + ".jsonl"))
        if not c:
            print(f"convergence: {m} has no validation loss in {a.dir}/{m}.jsonl")
            return 1
        curves[m] = c
    steps = sorted({s for c in curves.values() for s in c})
    with open(os.path.join(a.dir, "convergence.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step"] + modes)
        for s in steps:
            w.writerow([s] + [f"{curves[m][s]:.6f}" if s in curves[m] else "" for m in modes])
    svg(curves, os.path.join(a.dir, "convergence.svg"), a.title)
    ref = modes[0]
    last = max(curves[ref])
    worst = 0.0
    for m in modes:
        if last not in curves[m]:
            print(f"convergence: {m} has no validation loss at step {last}")
            return 1
        v, r = curves[m][last], curves[ref][last]
        pct = 100.0 * (v - r) / r
        same = " (bit-identical curve)" if curves[m] == curves[ref] and m != ref else ""
        print(f"convergence: {m} final val loss {v:.6f} at step {last}, {pct:+.4f}% vs {ref}{same}")
        worst = max(worst, abs(pct))
    print(f"wrote {a.dir}/convergence.csv and {a.dir}/convergence.svg")
    print(f"convergence: worst |final val loss - {ref}| = {worst:.4f}% (goal <= {a.max_pct:g}%) "
          f"over {len(modes)} modes")
    return 0 if worst <= a.max_pct else 1


if __name__ == "__main__":
    sys.exit(main())
