#!/usr/bin/env python3
"""Compares two train_gpt2_dump runs of the same tiny model (tests/gpt2/test_gpt2_cuda.sh): the
reference on the CPU device (fp32; the CPU kernels are fp32 only) and the run under test on the
CUDA device (fp32 or bf16). Standard library only (the GPU machine's python3 has numpy, this
machine's has not).

A run directory holds (train_gpt2_dump --dump-grads g --dump-weights w --metrics m.jsonl
--dump-logits logits.bin):
  g/meta.json, g/w.*.f32          shapes; the initial weights (fp32 master)
  g/r<R>.tok.i32, r<R>.tgt.i32    rank R's first micro-batch of step 0
  g/r<R>.losses.f32, .logits.f32  its per-token losses and logits
  g/r<R>.grad.*.f32, .grad_head.* its gradient of every tensor (and the LM head's share of wte)
  w/w.*.f32                       the fp32 master after the last step
  m.jsonl                         rank 0's loss, grad norm and skip flag of every step
  logits.bin                      int32 T, V, tokens[T], float32 logits[T][V] after training

Every comparison is a norm over a whole tensor, never a maximum over bf16 elements; the bounds
and why they are what they are (TOL below):
  * initial weights, tokens, targets: bit for bit. Both runs set the same host-side init into
    the fp32 master and read the same text; nothing has been computed yet.
  * fp32 CUDA vs CPU: the kernels add the same terms in another order (cuBLASLt's tiles vs
    OpenBLAS's, another attention blocking, warp-tree vs sequential row sums). A sum of K terms
    in another order differs by about sqrt(K) * 2^-24 relative: 1e-6 for these K (<= 256 here,
    4C), growing a little through two blocks and the backward. Step-0 logits, losses and the
    whole gradient: 1e-4 (about 100x the expectation; a missing term or a wrong index is
    >= 1e-2). One tensor's gradient: 1e-3 (small tensors such as a layernorm bias sum fewer,
    larger-cancelling terms).
  * bf16 CUDA vs fp32 CPU: the CUDA run holds params, activations and gradients in bf16
    (8 significant bits): every stored value carries up to 2^-9 = 2e-3 relative rounding, about
    1e-3 rms, and a value passes through ~10 such roundings per block. Expected relative error
    of logits and gradients: a few 1e-3 to 1e-2; bounds: logits 5e-2, the whole gradient 5e-2,
    one tensor 0.1 (>= 5x; a wrong kernel is off by O(1)).
  * Per-step losses (rank 0's mean over its micro-batch, ~5.6 nats at init): fp32 1e-4
    absolute; bf16 5e-2 absolute (logit errors of ~1e-3 move a token's loss by ~1e-3 and
    partly cancel in the mean). Gradient norms: relative, fp32 1e-3, bf16 5e-2.
  * Weights after the steps, measured relative to how far training moved them
    (|w_cuda - w_cpu| / |w_cpu - w_init|, ~0.9 after 4 steps of lr 1e-3 over 118k weights).
    AdamW's first update is lr * sign(g) and later ones lr * m / (sqrt(v) + eps), so an element
    whose gradient is within its rounding noise of zero steps the other way on one device: each
    such element adds up to 2 lr per step, 2e-3 / 0.9 for one step. fp32: gradients agree to
    ~1e-6, so about one element in a million flips; the qkv key bias, whose exact gradient is 0
    (softmax ignores a shift of a whole row of scores), has rounding noise of ~1e-11, far below
    eps = 1e-8, and hardly moves. Bound 0.05 (hundreds of flipped elements). bf16: gradients
    differ by ~1e-2, flipping the ~0.5% of elements below that noise (~0.1), and the key bias's
    noise (~1e-6) is above eps, so its 128 elements random-walk by lr a step (~0.05). Bound 0.6.
    Both fail when the CUDA step does not move the weights as the CPU's does (a skipped,
    doubled or misplaced update gives >= 1; a 1.5x learning rate gives 0.5, which fp32 catches).
    The logits after training: fp32 1e-3, bf16 0.1 relative. (Measured on the CPU: the same
    run with its batch split into two micro-steps, which changes the gradients' rounding only,
    ends 5e-6 from the unsplit one in this measure and its final logits 1.6e-7 apart.)

Usage:
  compare_gpt2_runs.py --profile fp32|bf16 --ranks N REF_DIR GOT_DIR
  compare_gpt2_runs.py --self-test RUN_DIR   (the checks against planted differences: each one
                                              must pass 0.5x its bound and fail at 2x)
Exit status 0 when every check passes."""
import argparse
import array
import copy
import glob
import json
import math
import os
import random
import sys

TOL = {
    "fp32": {"losses0": 1e-4, "logits0": 1e-4, "grad_tensor": 1e-3, "grad_all": 1e-4,
             "step_loss": 1e-4, "grad_norm": 1e-3, "weights_moved": 0.05, "logits_end": 1e-3},
    "bf16": {"losses0": 1e-2, "logits0": 5e-2, "grad_tensor": 0.1, "grad_all": 5e-2,
             "step_loss": 5e-2, "grad_norm": 5e-2, "weights_moved": 0.6, "logits_end": 0.1},
}


def read_arr(path, code):
    a = array.array(code)
    with open(path, "rb") as f:
        data = f.read()
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def load_run(d, ranks):
    """Everything of one run directory, in memory."""
    g, w = os.path.join(d, "g"), os.path.join(d, "w")
    run = {"meta": json.load(open(os.path.join(g, "meta.json"))), "init": {}, "final": {},
           "ranks": [], "steps": []}
    for p in sorted(glob.glob(os.path.join(g, "w.*.f32"))):
        run["init"][os.path.basename(p)] = read_arr(p, "f")
    for p in sorted(glob.glob(os.path.join(w, "w.*.f32"))):
        run["final"][os.path.basename(p)] = read_arr(p, "f")
    for r in range(ranks):
        pre = os.path.join(g, "r%d." % r)
        rr = {"tok": read_arr(pre + "tok.i32", "i"), "tgt": read_arr(pre + "tgt.i32", "i"),
              "losses": read_arr(pre + "losses.f32", "f"),
              "logits": read_arr(pre + "logits.f32", "f"), "grads": {}}
        for p in sorted(glob.glob(pre + "grad*.f32")):
            rr["grads"][os.path.basename(p)[len("r%d." % r):]] = read_arr(p, "f")
        run["ranks"].append(rr)
    with open(os.path.join(d, "m.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if "step" in e and "loss" in e:
                run["steps"].append(e)
    with open(os.path.join(d, "logits.bin"), "rb") as f:
        raw = f.read()
    hdr = array.array("i")
    hdr.frombytes(raw[:8])
    T, V = hdr[0], hdr[1]
    tok = array.array("i")
    tok.frombytes(raw[8:8 + 4 * T])
    lg = array.array("f")
    lg.frombytes(raw[8 + 4 * T:])
    run["end"] = {"T": T, "V": V, "tok": tok, "logits": lg}
    return run


def rel_l2(got, ref):
    """|got - ref| / |ref| over whole arrays; inf for a length mismatch or a non-finite value."""
    if len(got) != len(ref):
        return math.inf
    num = den = 0.0
    for a, b in zip(got, ref):
        d = a - b
        num += d * d
        den += b * b
    if not math.isfinite(num) or not math.isfinite(den):
        return math.inf
    return math.sqrt(num) / max(math.sqrt(den), 1e-30)


def max_abs(got, ref):
    if len(got) != len(ref):
        return math.inf
    m = 0.0
    for a, b in zip(got, ref):
        d = abs(a - b)
        if not d <= m:  # NaN lands here too
            m = d if math.isfinite(d) else math.inf
    return m


class Report:
    def __init__(self, quiet=False):
        self.fails = []
        self.quiet = quiet

    def check(self, what, value, bound, key):
        ok = value <= bound
        if not ok:
            self.fails.append(key)
        if not self.quiet:
            print("%s %-44s %.3g (bound %.3g)" % ("ok  " if ok else "FAIL", what, value, bound))

    def exact(self, what, same, key):
        if not same:
            self.fails.append(key)
        if not self.quiet:
            print("%s %-44s %s" % ("ok  " if same else "FAIL", what,
                                   "bit-identical" if same else "DIFFERENT"))


def compare(ref, got, profile, quiet=False):
    """Every check; returns the keys of the failed ones."""
    t = TOL[profile]
    rep = Report(quiet)
    keys = ("layers", "channels", "heads", "vocab", "padded_vocab", "B", "T", "world")
    rep.exact("meta.json shapes", all(ref["meta"].get(k) == got["meta"].get(k) for k in keys),
              "meta")
    same = ref["init"].keys() == got["init"].keys() and len(ref["init"]) > 0 and all(
        ref["init"][k].tobytes() == got["init"][k].tobytes() for k in ref["init"])
    rep.exact("initial weights (%d tensors)" % len(ref["init"]), same, "init")
    all_num = all_den = 0.0
    for r, (a, b) in enumerate(zip(ref["ranks"], got["ranks"])):
        rep.exact("rank %d tokens and targets" % r,
                  a["tok"] == b["tok"] and a["tgt"] == b["tgt"], "tokens")
        rep.check("rank %d step-0 per-token losses (max abs)" % r,
                  max_abs(b["losses"], a["losses"]) if profile == "fp32" else
                  rel_l2(b["losses"], a["losses"]), t["losses0"], "losses0")
        rep.check("rank %d step-0 logits (rel L2)" % r, rel_l2(b["logits"], a["logits"]),
                  t["logits0"], "logits0")
        if a["grads"].keys() != b["grads"].keys() or not a["grads"]:
            rep.exact("rank %d gradient files" % r, False, "grad_tensor")
            continue
        worst, worst_name = -1.0, ""
        for name in sorted(a["grads"]):
            e = rel_l2(b["grads"][name], a["grads"][name])
            if not e <= worst:
                worst, worst_name = e, name
            if e > t["grad_tensor"]:
                rep.check("rank %d gradient %s (rel L2)" % (r, name), e, t["grad_tensor"],
                          "grad_tensor")
            if name.startswith("grad."):
                for x, y in zip(b["grads"][name], a["grads"][name]):
                    all_num += (x - y) * (x - y)
                    all_den += y * y
        rep.check("rank %d worst tensor gradient (%s)" % (r, worst_name), worst,
                  t["grad_tensor"], "grad_tensor")
    n_ranks = len(ref["ranks"])
    rep.exact("ranks dumped (%d)" % n_ranks, n_ranks > 0 and n_ranks == len(got["ranks"]),
              "ranks")
    g_all = math.sqrt(all_num) / max(math.sqrt(all_den), 1e-30)
    rep.check("whole gradient, every rank (rel L2)",
              g_all if math.isfinite(g_all) else math.inf, t["grad_all"], "grad_all")
    rep.exact("steps logged (%d)" % len(ref["steps"]),
              len(ref["steps"]) == len(got["steps"]) and len(ref["steps"]) > 0, "steps")
    for a, b in zip(ref["steps"], got["steps"]):
        s = a["step"]
        rep.exact("step %d not skipped on either device" % s,
                  a["skipped"] == 0 and b["skipped"] == 0 and a["step"] == b["step"], "skipped")
        d = abs(b["loss"] - a["loss"])
        rep.check("step %d loss %.6f vs %.6f (abs)" % (s, b["loss"], a["loss"]),
                  d if math.isfinite(d) else math.inf, t["step_loss"], "step_loss")
        d = abs(b["grad_norm"] - a["grad_norm"]) / max(abs(a["grad_norm"]), 1e-30)
        rep.check("step %d grad norm %.6g vs %.6g (rel)" % (s, b["grad_norm"], a["grad_norm"]),
                  d if math.isfinite(d) else math.inf, t["grad_norm"], "grad_norm")
    # Weights after training, relative to how far training moved them.
    num = den = 0.0
    names = sorted(ref["final"])
    ok_names = names == sorted(got["final"]) and names == sorted(ref["init"]) and len(names) > 0
    rep.exact("final weight tensors (%d)" % len(names), ok_names, "final_names")
    if ok_names:
        for k in names:
            for x, y, w0 in zip(got["final"][k], ref["final"][k], ref["init"][k]):
                num += (x - y) * (x - y)
                den += (y - w0) * (y - w0)
    moved = math.sqrt(num) / max(math.sqrt(den), 1e-30)
    rep.check("final weights: |cuda - cpu| / |cpu - init|", moved if math.isfinite(moved)
              else math.inf, t["weights_moved"], "weights_moved")
    if den == 0.0:
        rep.exact("training moved the weights", False, "weights_moved")
    ea, eb = ref["end"], got["end"]
    rep.exact("final logits: shape and tokens",
              (ea["T"], ea["V"], ea["tok"]) == (eb["T"], eb["V"], eb["tok"]), "end_tokens")
    rep.check("final logits (rel L2)", rel_l2(eb["logits"], ea["logits"]), t["logits_end"],
              "logits_end")
    return rep.fails


def scaled_noise(ref_arr, rel, rng):
    """ref_arr plus random noise of L2 norm rel * |ref_arr|."""
    noise = [rng.gauss(0.0, 1.0) for _ in ref_arr]
    nn = math.sqrt(sum(x * x for x in noise)) or 1.0
    nr = math.sqrt(sum(x * x for x in ref_arr))
    return array.array("f", [a + rel * nr * x / nn for a, x in zip(ref_arr, noise)])


def plant(run, key, factor, profile, rng):
    """A copy of run with one difference of `factor` x the bound of check `key`."""
    t = TOL[profile]
    r = copy.deepcopy(run)
    r0 = r["ranks"][0]
    if key == "init":
        k = sorted(r["init"])[0]  # the last bit of one element
        b = bytearray(r["init"][k].tobytes())
        b[0] ^= 1
        r["init"][k] = array.array("f", bytes(b))
    elif key == "tokens":
        r0["tgt"][0] ^= 1
    elif key == "losses0":
        if profile == "fp32":
            r0["losses"][3] += factor * t["losses0"]
        else:
            r0["losses"] = scaled_noise(r0["losses"], factor * t["losses0"], rng)
    elif key == "logits0":
        r0["logits"] = scaled_noise(r0["logits"], factor * t["logits0"], rng)
    elif key == "grad_tensor":
        name = "grad.ln_f.lnf_b.f32"
        r0["grads"][name] = scaled_noise(r0["grads"][name], factor * t["grad_tensor"], rng)
    elif key == "grad_all":
        for name in r0["grads"]:
            if name.startswith("grad."):
                r0["grads"][name] = scaled_noise(r0["grads"][name], factor * t["grad_all"], rng)
        for rr in r["ranks"][1:]:
            for name in rr["grads"]:
                if name.startswith("grad."):
                    rr["grads"][name] = scaled_noise(rr["grads"][name], factor * t["grad_all"],
                                                     rng)
    elif key == "step_loss":
        r["steps"][-1]["loss"] += factor * t["step_loss"]
    elif key == "grad_norm":
        r["steps"][-1]["grad_norm"] *= 1.0 + factor * t["grad_norm"]
    elif key == "skipped":
        r["steps"][-1]["skipped"] = 1
    elif key == "weights_moved":
        # Noise of norm factor * bound * |final - init| spread over every tensor.
        dn = math.sqrt(sum((y - w0) ** 2 for k in r["final"]
                           for y, w0 in zip(r["final"][k], r["init"][k])))
        noise = {k: [rng.gauss(0.0, 1.0) for _ in r["final"][k]] for k in r["final"]}
        nn = math.sqrt(sum(x * x for k in noise for x in noise[k])) or 1.0
        for k in r["final"]:
            r["final"][k] = array.array("f", [y + factor * t["weights_moved"] * dn * x / nn
                                              for y, x in zip(r["final"][k], noise[k])])
    elif key == "logits_end":
        r["end"]["logits"] = scaled_noise(r["end"]["logits"], factor * t["logits_end"], rng)
    else:
        raise ValueError(key)
    return r


def self_test(d):
    """Each check must pass a planted difference of 0.5x its bound and fail one of 2x (bitwise
    checks: any difference fails). Returns the number of misbehaving checks."""
    ranks = len(glob.glob(os.path.join(d, "g", "r*.tok.i32")))
    run = load_run(d, ranks)
    rng = random.Random(1234)
    bad = 0
    for profile in ("fp32", "bf16"):
        fails = compare(run, run, profile, quiet=True)
        print("%s %s: the run against itself passes every check" %
              ("ok  " if not fails else "FAIL", profile))
        bad += bool(fails)
        for key in ("init", "tokens", "skipped"):
            fails = compare(run, plant(run, key, 2.0, profile, rng), profile, quiet=True)
            good = key in fails
            print("%s %s %-14s a planted difference fails it" % ("ok  " if good else "FAIL",
                                                                 profile, key))
            bad += not good
        for key in ("losses0", "logits0", "grad_tensor", "grad_all", "step_loss", "grad_norm",
                    "weights_moved", "logits_end"):
            small = compare(run, plant(run, key, 0.5, profile, rng), profile, quiet=True)
            large = compare(run, plant(run, key, 2.0, profile, rng), profile, quiet=True)
            good = key not in small and key in large
            print("%s %s %-14s passes at 0.5x its bound (%s), fails at 2x (%s)" %
                  ("ok  " if good else "FAIL", profile, key, ",".join(small) or "no failure",
                   ",".join(large) or "no failure"))
            bad += not good
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", choices=sorted(TOL))
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--self-test", metavar="RUN_DIR")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    if a.self_test:
        bad = self_test(a.self_test)
        print("compare_gpt2_runs self-test: %s" % ("OK" if not bad else "%d FAILED" % bad))
        return 1 if bad else 0
    if len(a.dirs) != 2 or not a.profile:
        ap.error("want --profile and REF_DIR GOT_DIR")
    ref, got = load_run(a.dirs[0], a.ranks), load_run(a.dirs[1], a.ranks)
    fails = compare(ref, got, a.profile)
    print("compare_gpt2_runs (%s, %d rank(s)): %s" %
          (a.profile, a.ranks, "OK" if not fails else "FAILED: " + ", ".join(sorted(set(fails)))))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
