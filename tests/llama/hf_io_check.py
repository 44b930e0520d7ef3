#!/usr/bin/env python3
"""Hugging Face transformers' side of tests/llama/test_llama_hf.sh (the Llama example's
safetensors I/O, examples/llama/hf_read.c, hf_write.c, config.c):

  hf_io_check.py save DIR ARCH DTYPE SHARD [DIR ARCH DTYPE SHARD ...]
      ARCH llama|qwen2|mistral, DTYPE float32|float16|bfloat16, SHARD e.g. 20KB: a small random
      model (Llama: 4 query / 2 key-value heads, llama3 RoPE scaling; Qwen2: q/k/v
      biases, tied head; Mistral: head_dim != hidden/heads, a sliding window) saved by
      save_pretrained with safetensors, sharded when over --shard.
  hf_io_check.py compare DIR DUMP [DIR DUMP ...]
      DUMP is `llama_io_tool dump DIR DUMP`: every tensor the C reader read (fp32) must equal
      torch's value of from_pretrained(DIR) exactly, every tensor of the model must be there, and
      the C side's parsed config (config.txt) must agree with the model transformers built.
  hf_io_check.py load OUT REF D VIA [OUT REF D VIA ...]     (VIA f32 or bf16)
      OUT was written by `llama_io_tool copy REF OUT`: from_pretrained(OUT) must load without
      missing, unexpected or mis-shaped keys, its torch_dtype must be D, every tensor must equal
      REF's converted by torch to D (through bfloat16 first with --via bf16), and the logits of both
      models on the same tokens must be equal.
Each item prints one line, "ok   ..." or "FAIL ..." with the reasons; exit status 0 when
everything holds, 1 otherwise (several items per run: Python starts once).
"""
import argparse
import os
import sys

import numpy as np
import torch
import transformers

DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
FILE_DT = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def small_config(arch):
    common = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2)
    if arch == "llama":
        return transformers.LlamaConfig(rope_theta=500000.0, tie_word_embeddings=False,
                                        rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                                      "low_freq_factor": 1.0,
                                                      "high_freq_factor": 4.0,
                                                      "original_max_position_embeddings": 32},
                                        **common)
    if arch == "qwen2":
        return transformers.Qwen2Config(rope_theta=1000000.0, tie_word_embeddings=True, **common)
    return transformers.MistralConfig(head_dim=16, sliding_window=64, tie_word_embeddings=False,
                                      **common)


def model_class(arch):
    return {"llama": transformers.LlamaForCausalLM, "qwen2": transformers.Qwen2ForCausalLM,
            "mistral": transformers.MistralForCausalLM}[arch]


def cmd_save(a):
    torch.manual_seed(1234)
    m = model_class(a.arch)(small_config(a.arch))
    with torch.no_grad():  # every value distinct (norms too), well inside every dtype's range
        for p in m.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    m = m.to(DT[a.dtype])
    m.save_pretrained(a.dir, max_shard_size=a.shard, safe_serialization=True)
    files = sorted(f for f in os.listdir(a.dir) if f.endswith(".safetensors"))
    print("ok   save %s %s %s: %s" % (a.arch, a.dtype, a.shard, ", ".join(files)))
    return 0


def load(d, **kw):
    m, info = model_class_of(d).from_pretrained(d, output_loading_info=True, **kw)
    return m, info


def model_class_of(d):
    cfg = transformers.AutoConfig.from_pretrained(d)
    return model_class(cfg.model_type)


def cmd_compare(a):
    cfg = transformers.AutoConfig.from_pretrained(a.dir)
    m, _ = load(a.dir, torch_dtype=cfg.torch_dtype)
    sd = m.state_dict()
    fails, n = [], 0
    for k, v in sd.items():
        if cfg.tie_word_embeddings and k == "lm_head.weight":
            continue
        path = os.path.join(a.dump, k + ".f32")
        if not os.path.exists(path):
            fails.append("%s: not read by the C side" % k)
            continue
        c = np.fromfile(path, dtype=np.float32)
        ref = v.float().numpy().ravel()
        n += 1
        if c.shape != ref.shape or not np.array_equal(c, ref):
            fails.append("%s: differs (max |c - torch| %g)" % (
                k, np.abs(c - ref).max() if c.shape == ref.shape else float("inf")))
    extra = len([f for f in os.listdir(a.dump) if f.endswith(".f32")]) - n
    if extra:
        fails.append("the C side read %d tensors the model does not have" % extra)
    # The C side's parsed config against the model transformers built from the same file.
    got = dict(l.split() for l in open(os.path.join(a.dump, "config.txt")))
    att = m.model.layers[0].self_attn
    rs = getattr(cfg, "rope_scaling", None) or {}
    want = {"arch": cfg.model_type, "vocab": cfg.vocab_size, "hidden": cfg.hidden_size,
            "intermediate": cfg.intermediate_size, "layers": cfg.num_hidden_layers,
            "heads": cfg.num_attention_heads, "kv_heads": cfg.num_key_value_heads,
            "head_dim": att.head_dim, "max_pos": cfg.max_position_embeddings,
            "rope_theta": float(cfg.rope_theta), "rms_eps": float(cfg.rms_norm_eps),
            "rope_llama3": int(rs.get("rope_type") == "llama3"),
            "qkv_bias": int(att.q_proj.bias is not None),
            "tied": int(cfg.tie_word_embeddings),
            "sliding_window": int(getattr(cfg, "sliding_window", None) or 0)
            if cfg.model_type == "mistral" else 0}
    if rs.get("rope_type") == "llama3":
        want.update(rope_factor=float(rs["factor"]), rope_low_freq=float(rs["low_freq_factor"]),
                    rope_high_freq=float(rs["high_freq_factor"]),
                    rope_orig_max_pos=rs["original_max_position_embeddings"])
    for k, v in want.items():
        g = got.get(k)
        if g is None or (float(g) != float(v) if not isinstance(v, str) else g != v):
            fails.append("config %s: C parsed %s, transformers has %s" % (k, g, v))
    name = os.path.basename(a.dir)
    for f in fails:
        print("FAIL read %s: %s" % (name, f))
    if not fails:
        print("ok   read %s: %d tensors equal to torch's, the config agrees" % (name, n))
    return 1 if fails else 0


def cmd_load(a):
    out, info = load(a.out, torch_dtype="auto")
    fails = ["loading info %s: %s" % (k, v) for k, v in info.items() if v]
    if out.config.torch_dtype != DT[a.dtype] or next(out.parameters()).dtype != DT[a.dtype]:
        fails.append("torch_dtype %s, parameters %s, want %s" % (
            out.config.torch_dtype, next(out.parameters()).dtype, a.dtype))
    ref, _ = load(a.ref, torch_dtype="auto")
    rsd, osd = ref.state_dict(), out.state_dict()
    if set(rsd) != set(osd):
        fails.append("keys differ: %s" % sorted(set(rsd) ^ set(osd)))
    n = 0
    for k in sorted(set(rsd) & set(osd)):
        want = rsd[k]
        if a.via == "bf16":
            want = want.to(torch.bfloat16)
        want = want.to(DT[a.dtype])
        if not torch.equal(osd[k], want):
            fails.append("%s differs from torch's conversion (max %g)" % (
                k, (osd[k].double() - want.double()).abs().max()))
        n += 1
    # Same weights, same logits (both computed in fp32).
    tok = torch.randint(0, ref.config.vocab_size, (2, 16), generator=torch.Generator().manual_seed(7))
    r2 = ref.float()
    with torch.no_grad():
        if a.via == "bf16" or a.dtype != "float32":
            for p in r2.parameters():
                p.copy_(p.to(torch.bfloat16 if a.via == "bf16" else p.dtype).to(DT[a.dtype]).float())
        lr = r2(tok).logits
        lo = out.float()(tok).logits
    if not torch.equal(lr, lo):
        fails.append("logits differ (max %g)" % (lr - lo).abs().max())
    name = os.path.basename(a.out)
    for f in fails:
        print("FAIL write %s: %s" % (name, f))
    if not fails:
        print("ok   write %s: from_pretrained loads it, %d tensors and the logits equal" % (name, n))
    return 1 if fails else 0


def main():
    argv = sys.argv[1:]
    if not argv or argv[0] not in ("save", "compare", "load"):
        print(__doc__)
        return 2
    cmd, rest = argv[0], argv[1:]
    per = {"save": 4, "compare": 2, "load": 4}[cmd]
    if not rest or len(rest) % per:
        print("%s takes groups of %d arguments" % (cmd, per))
        return 2
    transformers.logging.set_verbosity_error()
    bad = 0
    for i in range(0, len(rest), per):
        g = rest[i:i + per]
        if cmd == "save":
            a = argparse.Namespace(dir=g[0], arch=g[1], dtype=g[2], shard=g[3])
            what, fn = "save %s %s %s" % (g[1], g[2], g[3]), cmd_save
        elif cmd == "compare":
            a = argparse.Namespace(dir=g[0], dump=g[1])
            what, fn = "read %s" % os.path.basename(g[0]), cmd_compare
        else:
            a = argparse.Namespace(out=g[0], ref=g[1], dtype=g[2], via=g[3])
            what, fn = "write %s" % os.path.basename(g[0]), cmd_load
        try:
            rc = fn(a)
        except Exception as e:  # one item's failure is reported, the others still run
            print("FAIL %s: %s: %s" % (what, type(e).__name__, e))
            bad += 1
            continue
        bad += rc != 0
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
