#!/usr/bin/env python3
"""Summarises a ctest JUnit report (ctest --output-junit) for scripts/device-first.sh.

    ctest-junit-summary.py [--gpu|--no-gpu] [--all FILE] [--rerun FILE] REPORT.xml [GPU_TEST ...]
                                                  print the summary lines
    ctest-junit-summary.py --ok [--gpu|--no-gpu] [--all FILE] REPORT.xml [GPU_TEST ...]
                                                  exit 0 when no test failed

--all FILE names every test the run was asked for (one a line): those missing from the report
were not reached (ctest's --stop-time ends a run before it starts them), and count as failures.

--no-gpu says the machine has no GPU: then a GPU test that ran (passed or failed instead of
printing "SKIP: no CUDA device") is itself a failure, since its skip detection is wrong.

--gpu says the machine has a GPU: then a GPU test that skipped is a failure (it did not find the
device that is there), unless it said "SKIP: no O_DIRECT filesystem" (the NVMe tier's tests on a
machine whose folders all refuse O_DIRECT): that is reported on a line of its own.

--cut FILE names tests that ctest stopped at its --stop-time (it reports them as timeouts): they
count as not reached, not as failed.

--rerun FILE writes the names of the tests to run again (failed, not reached, and with --gpu the
GPU tests that skipped), one a line; --unreached FILE the names of those not reached alone
(scripts/device-first.sh --call 2 reruns the others first).

Lines printed: the totals (passed, failed, skipped), then for the GPU tests named on the command
line which ran, which were skipped (e.g. "SKIP: no CUDA device") and which failed, by name, so a
reader can tell whether the GPU tests really ran. Skipped and failed tests elsewhere are named too.
A test counts as skipped when ctest says so (SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION: a
<skipped> element or status "notrun"/"disabled"), failed when it has a <failure> or <error>
element or status "fail", passed otherwise.
"""
import sys
import xml.etree.ElementTree as ET


NODISK = "SKIP: no O_DIRECT filesystem"


def outcomes(path, nodisk=None):
    """{test name: 'passed' | 'failed' | 'skipped'} from the report; the names of the skipped
    tests whose output says NODISK are added to the set nodisk."""
    res = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        out = tc.find("system-out")
        if nodisk is not None and out is not None and NODISK in (out.text or ""):
            nodisk.add(tc.get("name"))
        status = (tc.get("status") or "").lower()
        if tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
            res[tc.get("name")] = "failed"
        elif tc.find("skipped") is not None or status in ("notrun", "disabled", "skipped"):
            res[tc.get("name")] = "skipped"
        else:
            res[tc.get("name")] = "passed"
    return res


def names(ns, limit=12):
    ns = sorted(ns)
    more = f" (+{len(ns) - limit} more)" if len(ns) > limit else ""
    return " ".join(ns[:limit]) + more


def main(argv):
    ok_mode = "--ok" in argv
    no_gpu = "--no-gpu" in argv
    has_gpu = "--gpu" in argv
    opts = {}
    for opt in ("--all", "--rerun", "--unreached", "--cut"):
        if opt in argv:
            i = argv.index(opt)
            if i + 1 >= len(argv):
                print(f"{opt} needs a file", file=sys.stderr)
                return 2
            opts[opt] = argv[i + 1]
            del argv[i:i + 2]
    wanted = set()
    if "--all" in opts:
        with open(opts["--all"]) as f:
            wanted = {line.strip() for line in f if line.strip()}
    argv = [a for a in argv if a not in ("--ok", "--no-gpu", "--gpu")]
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        nodisk = set()
        res = outcomes(argv[0], nodisk)
    except (OSError, ET.ParseError) as e:
        if not ok_mode:
            print(f"FAILED: cannot read the JUnit report {argv[0]}: {e}")
        return 1
    gpu = set(argv[1:])
    by = {k: {n for n, v in res.items() if v == k} for k in ("passed", "failed", "skipped")}
    ran = {n for n in gpu if res.get(n) in ("passed", "failed")}
    cut = set()
    if "--cut" in opts:
        with open(opts["--cut"]) as f:
            cut = {line.strip() for line in f if line.strip()} & by["failed"]
    by["failed"] -= cut
    ran -= cut
    unreached = (wanted - set(res)) | cut
    nodisk &= by["skipped"]
    gpu_skipped = (gpu & by["skipped"]) - nodisk if has_gpu else set()
    if "--unreached" in opts:
        with open(opts["--unreached"], "w") as f:
            for n in sorted(unreached):
                f.write(n + "\n")
    if "--rerun" in opts:
        with open(opts["--rerun"], "w") as f:
            for n in sorted(by["failed"] | unreached | gpu_skipped):
                f.write(n + "\n")
    if ok_mode:
        late = unreached if wanted else set()
        return 1 if by["failed"] or late or (no_gpu and ran) or gpu_skipped else 0
    more = f", {len(unreached)} not reached (budget)" if unreached else ""
    more += f" ({len(cut)} of them stopped at the stop time)" if cut else ""
    print(f"{len(res)} tests: {len(by['passed'])} passed, {len(by['failed'])} failed, "
          f"{len(by['skipped'])} skipped{more}")
    if unreached:
        print(f"  not reached: {names(unreached)}")
    if gpu:
        print(f"GPU tests: {len(ran)} of {len(gpu)} ran, {len(gpu & by['skipped'])} skipped, "
              f"{len(gpu & by['failed'])} failed")
        if gpu & unreached:
            print(f"  GPU tests not reached: {names(gpu & unreached)}")
        if ran and no_gpu:
            print(f"  FAILED: ran without a GPU (their skip is broken): {names(ran)}")
        elif ran:
            print(f"  GPU ran: {names(ran)}")
        if gpu_skipped:
            print(f"  FAILED: skipped with a GPU present: {names(gpu_skipped)}")
        elif gpu & by["skipped"] - nodisk:
            print(f"  GPU skipped: {names(gpu & by['skipped'] - nodisk)}")
        if gpu & nodisk:
            print(f"  skipped, no O_DIRECT filesystem: {names(gpu & nodisk)}")
    if by["failed"]:
        print(f"  failed: {names(by['failed'], 30)}")
    other_skips = by["skipped"] - gpu
    if other_skips:
        print(f"  other skipped: {names(other_skips)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
