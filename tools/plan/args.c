/* zshard-plan's command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static void usage(void) {
  printf(
      "zshard-plan: per-rank memory of a model under a zshard configuration, without running it.\n"
      "Model (one of):\n"
      "  --model d12|d24|d36|d48      GPT-2 preset (vocab 50257, 1024 positions)\n"
      "  --model llama3-8b|llama3-70b|qwen2.5-7b|qwen2.5-14b|qwen2.5-32b|mistral-7b\n"
      "  --model PATH/config.json     any Llama / Qwen2 / Mistral Hugging Face config\n"
      "                               (units and activations as examples/llama allocates them;\n"
      "                               --seq defaults to 2048)\n"
      "  --layers L --channels C --heads H [--vocab V] [--max-seq P]   free GPT-2 shape\n"
      "  --unit-sizes N1,N2,...       elements of each unit\n"
      "  --freeze SPEC                frozen units (params only): indexes N or ranges N-M,\n"
      "                               and for GPT-2 embedding, blocks, ln_f (as train_gpt2)\n"
      "  --params N [--units K]       N parameters split evenly into K units (default 1)\n"
      "  --safetensors FILE           a Hugging Face model.safetensors (+ config.json beside it)\n"
      "Activations (GPT-2 and Llama shapes, as the examples allocate them):\n"
      "  --batch B --seq T [--recompute]   micro-batch (default 4) and sequence (default: "
      "max-seq)\n"
      "  --activations BYTES          activation bytes per rank for any model (default 0)\n"
      "Configuration:\n"
      "  --world N --shard-group G --stage 0..3 --offload none|opt|opt+params\n"
      "  --tp T                       tensor parallelism (Llama models, as train_llama --tp):\n"
      "                               each rank holds 1/T of the heads, the MLP and (when T\n"
      "                               divides the vocabulary) the embedding and head; the\n"
      "                               shard group and stage apply to the world / T data-\n"
      "                               parallel ranks\n"
      "  --sp                         with --tp: train_llama --sp 1's sequence parallelism\n"
      "                               (1/T of the residual stream and norms a rank)\n"
      "  --vocab-parallel 0|1         with --tp: 0 plans train_llama --vocab-parallel 0 (the\n"
      "                               embedding and head whole on every tp rank); default 1\n"
      "  --dtype bf16|fp32 (params and grads; default fp32) --reduce-dtype bf16|fp32\n"
      "  --prefetch N (default 1) --bucket-bytes B --max-live-bytes B --deterministic\n"
      "  --offload-budget BYTES       budgeted partial offload: device bytes the model state and\n"
      "                               buffers may use; the largest units' optimizer state (and\n"
      "                               param shards) go to the host until the rest fits; free:\n"
      "                               what is free on the device at commit (the least over the\n"
      "                               ranks), decided then: planned as every unit on the device\n"
      "  --free BYTES                 with --offload-budget free: plan with this measured number\n"
      "  --offload-host-bytes BYTES   cap on the offloaded state's host bytes "
      "(offload_host_bytes)\n"
      "  --nvme-path DIR              the NVMe tier (nvme_path; not opened): with offload and\n"
      "                               --offload-host-bytes, the largest units' optimizer state\n"
      "                               past the cap goes to disk\n"
      "  --ckpt-async [--ckpt-staging-bytes BYTES]   asynchronous saves (ckpt_async): the host\n"
      "                               staging one rank keeps for them, at most BYTES\n"
      "  --held-units N               units the loop holds gathered at once (default: 1 for\n"
      "                               GPT-2 shapes, as the example; else the engine's 2)\n"
      "  --master fp32|params|remainder|lean  optimizer-state precision (zs_config.master): an\n"
      "                               fp32 master copy (default), the fp32 params as the master,\n"
      "                               bf16 params + a 16-bit remainder (exact; --dtype bf16), or\n"
      "                               lean: the bf16 params as the master (stochastic rounding)\n"
      "  --moment-dtype fp32|bf16     the optimizer's state (zs_config.moment_dtype; default "
      "fp32)\n"
      "  --grad-accum-dtype fp32|bf16 gradients summed over micro-steps in fp32 (with --dtype "
      "bf16;\n"
      "                               zs_config.grad_accum_fp32; default: --dtype's)\n"
      "  --optimizer NAME             zs_config.optimizer (default adamw); with a GPT-2 or Llama\n"
      "                               shape, muon is the examples' grouping (AdamW, the hidden\n"
      "                               units' matrices on Muon); one of the library's:\n"
      "                               ");
  for (int i = 0; zs_optimizer_name(i); i++) /* its state: the optimizer's own list */
    printf("%s%s", i ? ", " : "", zs_optimizer_name(i));
  printf(
      "\n"
      "  --momentum M                 sgd's momentum (default 0.9)\n"
      "  --device cpu|cuda (default: cuda when a GPU is visible)\n"
      "  --device-mem BYTES --host-mem BYTES   per rank (default: this machine's, host split\n"
      "                               among the ranks); suffixes K M G T (binary) or GB (10^9)\n"
      "Output:\n"
      "  --json                       {\"per_rank\": {...bytes...}, \"fits\": true|false}\n"
      "  --model-states-only          params + grads + optimizer (the ZeRO paper's accounting)\n"
      "  --recommend                  every configuration that fits, fastest first\n"
      "  --link-gbs X --pcie-gbs Y    bus bandwidth of the collectives' links and host<->device\n"
      "                               copies in GB/s for --recommend (defaults 100 and 25)\n");
}

/* "80G" = 80 GiB, "1.5GB" = 1.5e9, "4096" bytes. */
static int parse_bytes(const char *s, size_t *out) {
  char *end;
  double v = strtod(s, &end);
  double m = 1;
  if (!strcmp(end, "GB"))
    m = 1e9;
  else if (!strcmp(end, "TB"))
    m = 1e12;
  else if (!strcmp(end, "MB"))
    m = 1e6;
  else if (*end == 'K' || *end == 'k')
    m = 1024.0;
  else if (*end == 'M')
    m = 1024.0 * 1024;
  else if (*end == 'G')
    m = 1024.0 * 1024 * 1024;
  else if (*end == 'T')
    m = 1024.0 * 1024 * 1024 * 1024;
  else if (*end)
    return -1;
  if (end == s || v < 0 || v * m > 1.8e19) return -1;
  *out = (size_t)(v * m + 0.5);
  return 0;
}

static int parse_int(const char *k, const char *v, int *out, int lo) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || end == v || x < lo || x > 1 << 30) {
    fprintf(stderr, "zshard-plan: %s wants an integer >= %d, not '%s'\n", k, lo, v);
    return -1;
  }
  *out = (int)x;
  return 0;
}

static int parse_dtype(const char *k, const char *v, zs_dtype *d) {
  if (!strcmp(v, "bf16"))
    *d = ZS_BF16;
  else if (!strcmp(v, "fp32") || !strcmp(v, "f32"))
    *d = ZS_F32;
  else {
    fprintf(stderr, "zshard-plan: %s is bf16 or fp32, not '%s'\n", k, v);
    return -1;
  }
  return 0;
}

/* One option with a value; 0, -1 bad value, 1 unknown option. */
static int option(zp_args *a, const char *k, const char *v) {
  if (!strcmp(k, "--model")) return a->preset = v, 0;
  if (!strcmp(k, "--unit-sizes")) return a->unit_sizes = v, 0;
  if (!strcmp(k, "--freeze")) return a->freeze = v, 0;
  if (!strcmp(k, "--nvme-path")) return a->nvme_path = v, 0;
  if (!strcmp(k, "--safetensors")) return a->safetensors = v, 0;
  if (!strcmp(k, "--layers")) return a->have_shape = 1, parse_int(k, v, &a->gpt.layers, 1);
  if (!strcmp(k, "--channels")) return a->have_shape = 1, parse_int(k, v, &a->gpt.channels, 1);
  if (!strcmp(k, "--heads")) return parse_int(k, v, &a->gpt.heads, 1);
  if (!strcmp(k, "--vocab")) return parse_int(k, v, &a->gpt.vocab, 1);
  if (!strcmp(k, "--max-seq")) return parse_int(k, v, &a->gpt.max_seq, 1);
  if (!strcmp(k, "--units")) return parse_int(k, v, &a->units, 1);
  if (!strcmp(k, "--batch")) return parse_int(k, v, &a->batch, 1);
  if (!strcmp(k, "--seq")) return parse_int(k, v, &a->seq, 1);
  if (!strcmp(k, "--world")) return parse_int(k, v, &a->world, 1);
  if (!strcmp(k, "--tp")) return parse_int(k, v, &a->tp, 1);
  if (!strcmp(k, "--vocab-parallel")) {
    const int rc = parse_int(k, v, &a->vocab_parallel, 0);
    return rc == 0 && a->vocab_parallel > 1 ? -1 : rc; /* the caller names the bad value */
  }
  if (!strcmp(k, "--shard-group")) return parse_int(k, v, &a->group, 0);
  if (!strcmp(k, "--stage")) return parse_int(k, v, &a->stage, 0);
  if (!strcmp(k, "--prefetch")) return parse_int(k, v, &a->prefetch, 0);
  if (!strcmp(k, "--held-units")) return parse_int(k, v, &a->held_units, 1);
  if (!strcmp(k, "--dtype")) return parse_dtype(k, v, &a->dtype);
  if (!strcmp(k, "--reduce-dtype")) return a->reduce_set = 1, parse_dtype(k, v, &a->reduce_dtype);
  if (!strcmp(k, "--params")) {
    char *end;
    a->params = strtod(v, &end);
    return (*end || a->params < 1) ? -1 : 0;
  }
  if (!strcmp(k, "--link-gbs")) return a->link_gbs = atof(v), a->link_gbs > 0 ? 0 : -1;
  if (!strcmp(k, "--pcie-gbs")) return a->pcie_gbs = atof(v), a->pcie_gbs > 0 ? 0 : -1;
  if (!strcmp(k, "--offload")) {
    if (!strcmp(v, "none"))
      a->offload = 0;
    else if (!strcmp(v, "opt"))
      a->offload = ZS_OFFLOAD_OPTIMIZER;
    else if (!strcmp(v, "opt+params"))
      a->offload = ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS;
    else
      return -1;
    return 0;
  }
  if (!strcmp(k, "--moment-dtype")) return parse_dtype(k, v, &a->moment_dtype);
  if (!strcmp(k, "--grad-accum-dtype")) {
    zs_dtype d;
    if (parse_dtype(k, v, &d)) return -1;
    a->grad_accum_fp32 = d == ZS_F32;
    return 0;
  }
  if (!strcmp(k, "--optimizer")) {
    if (zs_optimizer_id(v, &a->optimizer) == ZS_OK) return 0;
    fprintf(stderr, "zshard-plan: --optimizer: %s\n", zs_last_error());
    return -1;
  }
  if (!strcmp(k, "--momentum")) {
    char *end = NULL;
    a->momentum = strtof(v, &end);
    return end && *end == 0 && a->momentum >= 0 ? 0 : -1;
  }
  if (!strcmp(k, "--master")) {
    if (!strcmp(v, "fp32"))
      a->master = ZS_MASTER_FP32;
    else if (!strcmp(v, "params"))
      a->master = ZS_MASTER_PARAMS;
    else if (!strcmp(v, "remainder"))
      a->master = ZS_MASTER_REMAINDER;
    else if (!strcmp(v, "lean"))
      a->master = ZS_MASTER_LEAN;
    else
      return -1;
    return 0;
  }
  if (!strcmp(k, "--offload-budget") && !strcmp(v, "free")) {
    a->budget = ZS_BUDGET_FREE; /* decided at commit; --free BYTES plans with a number */
    return 0;
  }
  if (!strcmp(k, "--device")) {
    if (!strcmp(v, "cpu"))
      a->device = ZS_DEVICE_CPU;
    else if (!strcmp(v, "cuda"))
      a->device = ZS_DEVICE_CUDA;
    else
      return -1;
    return 0;
  }
  size_t *b = !strcmp(k, "--device-mem")           ? &a->dev_mem
              : !strcmp(k, "--host-mem")           ? &a->host_mem
              : !strcmp(k, "--activations")        ? &a->activations
              : !strcmp(k, "--bucket-bytes")       ? &a->bucket
              : !strcmp(k, "--max-live-bytes")     ? &a->max_live
              : !strcmp(k, "--offload-budget")     ? &a->budget
              : !strcmp(k, "--offload-host-bytes") ? &a->host_cap
              : !strcmp(k, "--free")               ? &a->free_bytes
              : !strcmp(k, "--ckpt-staging-bytes") ? &a->ckpt_staging
                                                   : NULL;
  if (b) return parse_bytes(v, b);
  return 1;
}

int zp_dp_world(const zp_args *a) {
  return a->world / (a->tp > 1 ? a->tp : 1);
}

int zp_args_parse(zp_args *a, int argc, char **argv) {
  memset(a, 0, sizeof *a);
  a->world = 1;
  a->tp = 1;
  a->vocab_parallel = 1;
  a->stage = 3;
  a->prefetch = 1;
  a->batch = 4;
  a->units = 1;
  a->dtype = a->reduce_dtype = ZS_F32;
  a->device = zp_sys_gpu_bytes() ? ZS_DEVICE_CUDA : ZS_DEVICE_CPU;
  a->link_gbs = 100;
  a->pcie_gbs = 25;
  a->momentum = 0.9f;
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i];
    if (!strcmp(k, "--help") || !strcmp(k, "-h")) return usage(), 1;
    if (!strcmp(k, "--json")) {
      a->json = 1;
      continue;
    }
    if (!strcmp(k, "--model-states-only")) {
      a->states_only = 1;
      continue;
    }
    if (!strcmp(k, "--recommend")) {
      a->recommend = 1;
      continue;
    }
    if (!strcmp(k, "--recompute")) {
      a->recompute = 1;
      continue;
    }
    if (!strcmp(k, "--sp")) {
      a->sp = 1;
      continue;
    }
    if (!strcmp(k, "--ckpt-async")) {
      a->ckpt_async = 1;
      continue;
    }
    if (!strcmp(k, "--deterministic")) {
      a->deterministic = 1;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "zshard-plan: %s needs a value (or is unknown; see --help)\n", k);
      return -1;
    }
    int rc = option(a, k, argv[++i]);
    if (rc) {
      if (rc > 0)
        fprintf(stderr, "zshard-plan: unknown option %s (see --help)\n", k);
      else
        fprintf(stderr, "zshard-plan: bad value '%s' for %s (see --help)\n", argv[i], k);
      return -1;
    }
  }
  if (!a->reduce_set) a->reduce_dtype = a->dtype;
  if (a->stage > 3) {
    fprintf(stderr, "zshard-plan: --stage is 0, 1, 2 or 3\n");
    return -1;
  }
  if (a->sp && a->tp < 2) {
    fprintf(stderr, "zshard-plan: --sp (sequence parallelism) splits tokens over the tp group: "
                    "give --tp 2 or more\n");
    return -1;
  }
  if (a->world % a->tp) {
    fprintf(stderr, "zshard-plan: --tp %d does not divide --world %d\n", a->tp, a->world);
    return -1;
  }
  if (a->free_bytes && a->budget != ZS_BUDGET_FREE) {
    fprintf(stderr, "zshard-plan: --free BYTES plans an '--offload-budget free' run: add that\n");
    return -1;
  }
  return 0;
}
