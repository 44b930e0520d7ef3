#!/usr/bin/env python3
"""Every header's include guard names its path, so that a header moved to another folder cannot keep
the old folder's name in its guard (and two headers cannot share one by accident):

  src/<path>.h       -> ZS_<PATH>_H          src/device/cuda/cuda_common.cuh -> ZS_DEVICE_CUDA_CUDA_COMMON_CUH
  tests/<path>.h     -> ZS_TESTS_<PATH>_H    tests/shard/fake_ctx.h -> ZS_TESTS_SHARD_FAKE_CTX_H
  bench/, tools/     -> ZS_BENCH_..., ZS_TOOLS_...
  include/<name>.h   -> <NAME>_H             the public headers: ZSHARD_H, ZSHARD_KERNELS_H
  examples/<path>.h  -> <PATH>_H             examples/gpt2/args.h -> GPT2_ARGS_H

Usage: check_header_guards.py REPO [--fix]. Prints each header whose guard differs (and rewrites
it with --fix); exits 1 when there was one.
"""
import os
import re
import sys

PREFIX = {"src": "ZS_", "tests": "ZS_TESTS_", "bench": "ZS_BENCH_", "tools": "ZS_TOOLS_",
          "include": "", "examples": ""}


def expected(rel):
    top, rest = rel.split("/", 1)
    return PREFIX[top] + re.sub(r"[^A-Za-z0-9]", "_", rest).upper()


def headers(repo):
    for top in PREFIX:
        for root, dirs, files in os.walk(os.path.join(repo, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "build")))
            for f in sorted(files):
                if f.endswith((".h", ".cuh")):
                    yield os.path.relpath(os.path.join(root, f), repo).replace(os.sep, "/")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    repo, fix = sys.argv[1], "--fix" in sys.argv[2:]
    bad = n = 0
    for rel in headers(repo):
        n += 1
        path = os.path.join(repo, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        m = re.search(r"^#ifndef (\w+)\n#define (\w+)\n", text, re.M)
        if not m or m.group(1) != m.group(2):
            print(f"{rel}: no '#ifndef G' + '#define G' include guard")
            bad += 1
            continue
        have, want = m.group(1), expected(rel)
        if have == want:
            continue
        print(f"{rel}: guard {have}, want {want}")
        bad += 1
        if fix:
            with open(path, "w", encoding="utf-8") as f:
                f.write(re.sub(r"\b%s\b" % re.escape(have), want, text))
    if bad:
        print(f"check_header_guards: {bad} of {n} headers have a guard that does not name the path")
        return 1
    print(f"check_header_guards: {n} headers, every guard names its path")
    return 0


if __name__ == "__main__":
    sys.exit(main())
