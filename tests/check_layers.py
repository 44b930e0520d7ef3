#!/usr/bin/env python3
"""Include-direction check: every file under src/ belongs to a layer, and may include only its own
layer and the layers below it (docs/ARCHITECTURE.md):

    base < ckpt < device < comm < mem < offload < shard < optim < tier < engine < kernels

Includes that still point upward are listed in tests/layers_allow.txt (the debt the folder split
removes); anything else upward fails, and so does an allowed include that no longer exists (the
list only shrinks). A few includes are forbidden although they point down (FORBIDDEN: the kernels
library has its own error helper). Usage: check_layers.py REPO_ROOT
"""
import os
import re
import sys

ORDER = ["base", "ckpt", "device", "comm", "mem", "offload", "shard", "optim", "tier", "engine",
         "kernels"]

# (path regex relative to src/, layer), first match wins: a layer is a folder.
MAP = [
    (r"^base/", "base"),
    (r"^ckpt/", "ckpt"),
    (r"^device/", "device"),
    (r"^comm/", "comm"),
    (r"^offload/", "offload"),
    (r"^mem/", "mem"),
    (r"^shard/", "shard"),
    (r"^optim/", "optim"),
    (r"^tier/", "tier"),
    (r"^engine/", "engine"),
    (r"^kernels/", "kernels"),
]


# Includes that are not upward but still wrong: (file regex under src/, header, why).
FORBIDDEN = [
    (r"^kernels/", "base/error.h",
     "the kernels library reports through kernels/kerr.h (zs_kerr); zs_err is libzshard's"),
    (r"^kernels/", "device/cuda/cuda_check.cuh",
     "it reports through libzshard's zs_err; the kernels use zs_kcu_check (kernels/cuda/kctx.cuh)"),
]


def layer_of(rel):
    for pat, lay in MAP:
        if re.search(pat, rel):
            return lay
    return None


def main(root):
    src = os.path.join(root, "src")
    allow_path = os.path.join(root, "tests", "layers_allow.txt")
    allowed = set()
    with open(allow_path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                allowed.add(tuple(line.split()))
    failures, seen, files = [], set(), 0
    for dirpath, _, names in os.walk(src):
        for n in sorted(names):
            if not re.search(r"\.(c|h|cu|cuh)$", n):
                continue
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, src)
            me = layer_of(rel)
            files += 1
            if me is None:
                failures.append(f"{rel}: in no layer (add it to the map in tests/check_layers.py)")
                continue
            with open(path, errors="replace") as f:
                for no, line in enumerate(f, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if ".." in inc.split("/"):
                        failures.append(f"src/{rel}:{no}: include \"{inc}\" climbs with '..': "
                                        f"include by the path under src/")
                        continue
                    # As written under src/, else relative to the file's own folder.
                    target = inc
                    if not os.path.exists(os.path.join(src, target)):
                        target = os.path.relpath(os.path.join(os.path.dirname(path), inc), src)
                    if not os.path.exists(os.path.join(src, target)):
                        continue  # public headers (include/) and system-like includes
                    for pat, header, why in FORBIDDEN:
                        if re.search(pat, rel) and target == header:
                            failures.append(f"src/{rel}:{no}: includes {header}: {why}")
                    them = layer_of(target)
                    if them is None or ORDER.index(them) <= ORDER.index(me):
                        continue
                    key = (rel, target)
                    if key in allowed:
                        seen.add(key)
                        continue
                    failures.append(f"src/{rel}:{no}: {me} includes {target} ({them}), a layer "
                                    f"above it")
    for key in sorted(allowed - seen):
        failures.append(f"tests/layers_allow.txt: '{key[0]} {key[1]}' no longer happens: remove "
                        f"the line")
    print(f"check_layers: {files} files, {len(seen)} upward includes still allowed")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
