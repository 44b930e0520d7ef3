#!/usr/bin/env python3
"""Compares the fp32 tensors of two safetensors files (standard library only), for
test_train_llama_modes.sh.
usage: st_compare.py A.safetensors B.safetensors MODE REGEX [BOUND]
  MODE same:    every tensor whose name matches REGEX is bit-identical in A and B
  MODE differ:  every tensor whose name matches REGEX differs somewhere
  MODE close:   every tensor whose name matches REGEX has max |a - b| <= BOUND
Prints one line per checked tensor and 'ok' last when every check holds (exit 0), else exit 1."""
import array
import json
import re
import struct
import sys


def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        body = f.read()
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {t['dtype']}, not F32")
        a, b = t["data_offsets"]
        out[name] = body[a:b]
    return out


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    mode, rx = sys.argv[3], re.compile(sys.argv[4])
    bound = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
    if sorted(a) != sorted(b):
        sys.exit("the files hold different tensor names")
    good, checked = True, 0
    for name in sorted(a):
        if not rx.search(name):
            continue
        checked += 1
        same = a[name] == b[name]
        fa, fb = array.array("f", a[name]), array.array("f", b[name])
        diff = max((abs(x - y) for x, y in zip(fa, fb)), default=0.0)
        ok = {"same": same, "differ": not same, "close": diff <= bound}[mode]
        print(f"{'ok  ' if ok else 'FAIL'} {mode} {name}: max |a-b| {diff:.3g}")
        good = good and ok
    if checked == 0:
        sys.exit(f"no tensor matches {sys.argv[4]}")
    if good:
        print("ok")
    sys.exit(0 if good else 1)


main()
