"""Reads a run directory's TensorBoard event files with TensorBoard's own reader and compares
every scalar with the run's JSONL metrics, bit for bit as float32.

  check_tensorboard.py TB_DIR METRICS.jsonl [METRICS.jsonl ...]

Each event file (in name order: their names start with the creation time) belongs to the
metrics file in the same position (a resumed run writes a second event file). Each file must
open with the version record, hold every JSONL step's scalars and every validation loss, and
nothing else. Exit 0 when all match, 1 with the differences listed."""
import glob
import json
import os
import struct
import sys

from tensorboard.backend.event_processing import event_file_loader
from tensorboard.util import tensor_util

# JSONL key -> TensorBoard tag (and perf/mfu where the JSONL has an MFU: CUDA runs).
TAGS = {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm",
        "skipped": "train/skipped_nonfinite", "ms": "perf/step_ms",
        "tokens_per_s": "perf/tokens_per_s", "check_ms": "perf/check_ms",
        "comm_ms": "time/comm_ms", "update_ms": "time/update_ms", "io_ms": "time/io_ms",
        "data_ms": "time/data_ms",
        "compute_ms": "time/compute_ms", "max_ms": "time/max_ms",
        "slowest_rank": "time/slowest_rank", "comm_mb": "comm/bus_mb",
        "tp_comm_mb": "comm/tp_bus_mb", "gpu_comm_ms": "time/gpu_comm_ms",
        "gpu_exposed_ms": "time/gpu_exposed_ms", "gpu_missed": "time/gpu_missed",
        "ckpt_writing": "ckpt/writing"}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def events(path):
    """[(step, tag, value)] and the file version of the first record."""
    out, version = [], None
    for i, ev in enumerate(event_file_loader.EventFileLoader(path).Load()):
        if i == 0:
            version = ev.file_version
            continue
        for v in ev.summary.value:
            x = float(tensor_util.make_ndarray(v.tensor)) if v.HasField("tensor") else v.simple_value
            out.append((ev.step, v.tag, f32(x)))
    return out, version


def expected(path):
    want = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "event" in r:  # the run's description, not a step's values
                continue
            if "val_loss" in r:
                want.append((r["step"], "val/loss", f32(r["val_loss"])))
            elif "memory_max" in r:
                for cat, (cur, peak) in r["memory_max"].items():
                    want.append((r["step"], "memory/" + cat, f32(cur)))
                    want.append((r["step"], "memory/%s_peak" % cat, f32(peak)))
            elif "ckpt_s" in r:
                want.append((r["step"], "ckpt/blocking_s", f32(r["ckpt_s"])))
            elif "ckpt_wait_s" in r:
                want.append((r["step"], "ckpt/wait_s", f32(r["ckpt_wait_s"])))
            elif "loss" in r and "step" in r:
                for k, tag in TAGS.items():
                    want.append((r["step"], tag, f32(r[k])))
                if r.get("mfu", 0) != 0:  # written where there is one (CUDA)
                    want.append((r["step"], "perf/mfu", f32(r["mfu"])))
    return want


def main():
    tb, metrics = sys.argv[1], sys.argv[2:]
    files = sorted(glob.glob(os.path.join(tb, "events.out.tfevents.*")))
    bad = []
    if len(files) != len(metrics):
        bad.append("%d event files for %d runs: %s" % (len(files), len(metrics), files))
    n = 0
    for path, m in zip(files, metrics):
        got, version = events(path)
        if version != "brain.Event:2":
            bad.append("%s: first record's file_version %r" % (path, version))
        want = expected(m)
        if sorted(got) != sorted(want):
            missing = [w for w in want if w not in got][:5]
            extra = [g for g in got if g not in want][:5]
            bad.append("%s vs %s: %d scalars, %d expected; missing %s; extra %s"
                       % (os.path.basename(path), m, len(got), len(want), missing, extra))
        n += len(got)
    if bad:
        print("tensorboard: FAIL\n  " + "\n  ".join(bad))
        return 1
    print("tensorboard: %d event files, %d scalars equal to the JSONL metrics bit for bit"
          % (len(files), n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
