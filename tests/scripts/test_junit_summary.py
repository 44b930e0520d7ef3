#!/usr/bin/env python3
"""scripts/ctest-junit-summary.py against JUnit reports that ctest itself writes.

A throw-away CMake project holds one test of each outcome (passes, fails, exits 77 under
SKIP_RETURN_CODE, prints "SKIP: no CUDA device" under SKIP_REGULAR_EXPRESSION, a GPU test that
skips for want of an O_DIRECT filesystem); ctest runs
subsets of it with --output-junit, and the summary's verdicts (--ok, --gpu, --no-gpu, --all,
--rerun) must follow from what each subset holds. usage: test_junit_summary.py REPO
"""
import os
import subprocess
import sys
import tempfile

CMAKE = """cmake_minimum_required(VERSION 3.16)
project(j NONE)
enable_testing()
add_test(NAME cpu_pass COMMAND sh -c "exit 0")
add_test(NAME cpu_fail COMMAND sh -c "exit 3")
add_test(NAME cpu_skip COMMAND sh -c "exit 77")
set_tests_properties(cpu_skip PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME gpu_ran COMMAND sh -c "echo kernel ok")
add_test(NAME gpu_skip COMMAND sh -c "echo 'SKIP: no CUDA device'")
add_test(NAME gpu_nodisk COMMAND sh -c "echo 'SKIP: no O_DIRECT filesystem (tmpfs)'; exit 77")
set_tests_properties(gpu_ran gpu_skip gpu_nodisk PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP: no CUDA device")
set_tests_properties(gpu_nodisk PROPERTIES SKIP_RETURN_CODE 77)
"""


def main(repo):
    summary = os.path.join(repo, "scripts", "ctest-junit-summary.py")
    fails = 0
    with tempfile.TemporaryDirectory() as d:
        src, build = os.path.join(d, "src"), os.path.join(d, "build")
        os.makedirs(src)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write(CMAKE)
        subprocess.run(["cmake", "-S", src, "-B", build], check=True, capture_output=True)

        def report(regex):
            xml = os.path.join(d, f"r{abs(hash(regex))}.xml")
            subprocess.run(["ctest", "--output-junit", xml, "-R", regex], cwd=build,
                           capture_output=True)
            return xml

        def run(args):
            r = subprocess.run([sys.executable, summary] + args, capture_output=True, text=True)
            return r.returncode, r.stdout

        asked = os.path.join(d, "asked.txt")
        rerun = os.path.join(d, "rerun.txt")
        gpu = ["gpu_ran", "gpu_skip"]
        # (what ctest runs, summary options, GPU test names, --all names, expected --ok status,
        #  expected --rerun list, what it shows)
        cases = [
            ("^cpu_pass$", [], [], None, 0, [], "one passing test"),
            ("^cpu_(pass|skip)$", [], [], None, 0, [], "a skip is not a failure"),
            ("^cpu_(pass|fail)$", [], [], None, 1, ["cpu_fail"], "a failure"),
            ("^cpu_pass$", [], [], ["cpu_pass", "cpu_late"], 1, ["cpu_late"],
             "a test asked for but not in the report was not reached"),
            ("^gpu_skip$", ["--no-gpu"], gpu[1:], None, 0, [], "no GPU: GPU test skips"),
            ("^gpu_ran$", ["--no-gpu"], gpu[:1], None, 1, [], "no GPU: a GPU test that ran"),
            ("^gpu_", ["--gpu"], gpu, None, 1, ["gpu_skip"], "GPU: a GPU test that skipped"),
            ("^gpu_ran$", ["--gpu"], gpu[:1], None, 0, [], "GPU: GPU test ran"),
            ("^(cpu_skip|gpu_ran)$", ["--gpu"], gpu[:1], None, 0, [],
             "GPU: a CPU test's skip stays a skip"),
            ("^gpu_(ran|nodisk)$", ["--gpu"], ["gpu_ran", "gpu_nodisk"], None, 0, [],
             "GPU: a skip for want of an O_DIRECT filesystem is not a failure"),
            ("^cpu_(pass|fail)$", ["--cut", "CUT"], [], None, 0, ["cpu_fail"],
             "a test stopped at the stop time is not reached, not failed"),
            ("^cpu_(pass|fail)$", ["--cut", "CUT"], [], ["cpu_pass", "cpu_fail"], 1, ["cpu_fail"],
             "... and with --all it is a test not reached"),
        ]
        cut = os.path.join(d, "cut.txt")
        with open(cut, "w") as f:
            f.write("cpu_fail\n")
        for regex, opts, gpu_names, all_names, want_ok, want_rerun, what in cases:
            opts = [cut if o == "CUT" else o for o in opts]
            xml = report(regex)
            extra = []
            if all_names is not None:
                with open(asked, "w") as f:
                    f.write("\n".join(all_names) + "\n")
                extra = ["--all", asked]
            rc, _ = run(["--ok"] + opts + extra + [xml] + gpu_names)
            if os.path.exists(rerun):
                os.remove(rerun)
            _, text = run(opts + extra + ["--rerun", rerun, xml] + gpu_names)
            got_rerun = ["(no --rerun file written)"]
            if os.path.exists(rerun):
                with open(rerun) as f:
                    got_rerun = sorted(line.strip() for line in f if line.strip())
            ok = rc == want_ok and got_rerun == sorted(want_rerun)
            fails += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {what}: --ok exit {rc} (want {want_ok}), "
                  f"rerun {got_rerun} (want {sorted(want_rerun)})")
            if not ok:
                print("    " + text.replace("\n", "\n    "))
    print(f"test_junit_summary: {len(cases) - fails} passed, {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
