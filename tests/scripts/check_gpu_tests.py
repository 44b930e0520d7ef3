#!/usr/bin/env python3
"""Every test that touches the GPU is a GPU test in ctest's eyes (ctest `gpu_tests_marked`).

Reads the build's test list (ctest --show-only=json-v1) and checks that each test that uses CUDA
(it runs a compiled test_*cuda* or test_*nccl* program, it runs with --device cuda, or its
environment asks for ZS_COMM=nccl or a per-rank NCCL_HOSTID) carries the label "gpu", the
resource lock "gpu" (one GPU test at a time: they allocate on the one GPU and some measure its
memory) and the skip expression "SKIP: no CUDA device" (so a machine without a GPU reports them
as skipped, not passed); a test that runs several NCCL ranks (more than one PROCESSORS and
NCCL_HOSTID, ZS_COMM=nccl or a test_*nccl* program) also carries the label "nccl-multi", which
keeps it out of the compute-sanitizer passes. Every test labelled "gpu" carries exactly one tier
label gpu-t1 .. gpu-t4 (tests/gpu_tiers.cmake: the order scripts/device-first.sh runs them in),
and every name tests/gpu_tiers.cmake lists is a GPU test. Prints each offender; exit 1 if any.
usage: check_gpu_tests.py BUILD_DIR
"""
import json
import re
import subprocess
import sys


def listed_tiers(build):
    """Names listed in tests/gpu_tiers.cmake's ZS_GPU_T<n> lists (the source folder from the cache)."""
    src = None
    with open(f"{build}/CMakeCache.txt") as f:
        for line in f:
            if line.startswith("zshard_SOURCE_DIR:") or line.startswith("CMAKE_HOME_DIRECTORY:"):
                src = line.split("=", 1)[1].strip()
                break
    if not src:
        return []
    text = open(f"{src}/tests/gpu_tiers.cmake").read()
    names = []
    for body in re.findall(r"set\(ZS_GPU_T[1-4]\s+([^)]*)\)", text):
        names += body.split()
    return names


def main(build):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                         capture_output=True, text=True).stdout
    bad, n_gpu = [], 0
    tests = json.loads(out).get("tests", [])
    gpu_names = set()
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        labels = props.get("LABELS", [])
        if "gpu" in labels:
            gpu_names.add(t["name"])
            tiers = [x for x in labels if re.fullmatch(r"gpu-t[1-4]", x)]
            if len(tiers) != 1:
                bad.append(f"{t['name']}: has tier labels {tiers or 'none'}, wants exactly one")
    listed = listed_tiers(build)
    for n in sorted({n for n in listed if listed.count(n) > 1}):
        bad.append(f"{n}: listed in more than one tier (or twice) in tests/gpu_tiers.cmake")
    for n in listed:
        if n not in gpu_names:
            bad.append(f"{n}: listed in tests/gpu_tiers.cmake but no GPU test has that name")
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        cmd = " ".join(t.get("command") or [])
        env = " ".join(props.get("ENVIRONMENT", []))
        progs = [c.rsplit("/", 1)[-1] for c in t.get("command") or []]
        uses_gpu = (any(re.fullmatch(r"test_\w*(cuda|nccl)\w*", p) for p in progs)
                    or "--device cuda" in cmd or "--device=cuda" in cmd
                    or "ZS_COMM=nccl" in env or "with_hostid" in cmd + env)
        if not uses_gpu:
            continue
        n_gpu += 1
        missing = []
        if "gpu" not in props.get("LABELS", []):
            missing.append('label "gpu"')
        if "gpu" not in props.get("RESOURCE_LOCK", []):
            missing.append('RESOURCE_LOCK "gpu"')
        if "SKIP: no CUDA device" not in " ".join(props.get("SKIP_REGULAR_EXPRESSION", [])):
            missing.append('SKIP_REGULAR_EXPRESSION "SKIP: no CUDA device"')
        procs = int(props.get("PROCESSORS", 1) or 1)
        if procs > 1 and ("with_hostid" in cmd + env or "ZS_COMM=nccl" in env
                          or any(re.fullmatch(r"test_\w*nccl\w*", p) for p in progs)):
            if "nccl-multi" not in props.get("LABELS", []):
                missing.append('label "nccl-multi" (several NCCL ranks: no compute-sanitizer)')
        if missing:
            bad.append(f"{t['name']}: lacks {', '.join(missing)}")
    for b in bad:
        print(f"FAIL {b}")
    print(f"{n_gpu} GPU tests checked: {n_gpu - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
