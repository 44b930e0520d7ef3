#!/usr/bin/env python3
"""Runs single-process GPU ctest tests under NVIDIA compute-sanitizer (scripts/device-first.sh, call 2).

    device-sanitize.py BUILD_DIR TOOL [NAME_REGEX [SECONDS]]

TOOL is memcheck, racecheck, synccheck or initcheck. The tests are those ctest labels "gpu" and not
"nccl-multi" whose command is a program, or `mpirun ... -np N PROGRAM ...` with N <= 2 (the
sanitizer then wraps each rank's PROGRAM inside mpirun). Tests with several NCCL ranks (label
"nccl-multi", given in tests/CMakeLists.txt and checked by ctest gpu_tests_marked) are left out:
NCCL over sockets between ranks that share one GPU is too slow under the sanitizer; so are
scripts. memcheck runs with --report-api-errors no: tests provoke CUDA errors on purpose (an
allocation beyond a pool's limit) and the engine checks every CUDA return itself. Each test runs with its ctest environment and a 300 s
limit, and no test is started once SECONDS (default: no limit) have passed (those count as "not
reached"); the sanitizer's exit code 86 marks the errors it found. A test that printed
"SKIP: no CUDA device" counts as skipped; one where the sanitizer says "Device not supported"
(seen on gVisor machines) counts as unsupported, and the run stops there. Prints one line per test, then a last line
"TOOL: N passed, M failed, K skipped" (exit status 0 when none failed).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

ERR = 86


def tests(build, regex):
    out = subprocess.run(["ctest", "--show-only=json-v1", "-L", "gpu", "-LE", "nccl-multi"],
                         cwd=build, check=True,
                         capture_output=True, text=True).stdout
    for t in json.loads(out).get("tests", []):
        if regex and not re.search(regex, t["name"]):
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        cmd = t.get("command") or []
        yield t["name"], cmd, props.get("ENVIRONMENT", []), props.get("WORKING_DIRECTORY", build)


def wrap(cmd, env, tool):
    """The command with compute-sanitizer before the program, or None when it is left out."""
    san = ["compute-sanitizer", "--tool", tool, "--error-exitcode", str(ERR), "--print-limit", "20"]
    if tool == "memcheck":
        san += ["--leak-check", "no", "--report-api-errors", "no"]
    if not cmd or os.path.basename(cmd[0]) in ("bash", "sh", "python3", "env"):
        return None
    if os.path.basename(cmd[0]).startswith(("mpirun", "mpiexec")):
        if "-np" not in cmd or cmd[cmd.index("-np") + 1] not in ("1", "2"):
            return None
        nccl = "ZS_COMM=nccl" in env or any("with_hostid" in c for c in cmd)
        if cmd[cmd.index("-np") + 1] == "2" and nccl:
            return None
        i = cmd.index("-np") + 2
        while i < len(cmd) and cmd[i].startswith("-"):
            i += 1
        return cmd[:i] + san + cmd[i:]
    return san + cmd


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    build, tool = argv[0], argv[1]
    regex = argv[2] if len(argv) > 2 else ""
    deadline = time.time() + float(argv[3]) if len(argv) > 3 else float("inf")
    counts = {"passed": 0, "failed": 0, "skipped": 0, "not reached": 0, "unsupported": 0}
    for name, cmd, env, cwd in tests(build, regex):
        full = wrap(cmd, env, tool)
        if full is None:
            continue
        if time.time() > deadline - 10:
            counts["not reached"] += 1
            continue
        e = dict(os.environ)
        for kv in env:
            k, _, v = kv.partition("=")
            e[k] = v
        t0 = time.time()
        limit = max(10, min(300, deadline - time.time()))
        # Own process group: on timeout the whole tree (mpirun, its ranks, the sanitizer) goes.
        p = subprocess.Popen(full, cwd=cwd, env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            raw, _ = p.communicate(timeout=limit)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            raw, _ = p.communicate()
            rc, raw = -1, f"timed out after {limit:.0f} s\n".encode() + (raw or b"")
        text = raw.decode("utf-8", "replace")
        if "Device not supported" in text:
            counts["unsupported"] += 1
            print(f"{tool} {name}: unsupported (compute-sanitizer: Device not supported)")
            break
        if "SKIP: no CUDA device" in text:
            res = "skipped"
        elif rc == 0:
            res = "passed"
        else:
            res = "failed"
        counts[res] += 1
        print(f"{tool} {name}: {res} (exit {rc}, {time.time() - t0:.0f} s)")
        if res == "failed":
            lines = [l for l in text.splitlines() if "=========" in l or "FAIL" in l or "rror" in l]
            for l in (lines or text.splitlines())[:25]:
                print(f"    {l}")
        sys.stdout.flush()
    more = f", {counts['not reached']} not reached (budget)" if counts["not reached"] else ""
    if counts["unsupported"]:
        more += ", stopped: the sanitizer does not support this device (runtime)"
    print(f"{tool}: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped{more}")
    return 1 if counts["failed"] or counts["not reached"] or counts["unsupported"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
