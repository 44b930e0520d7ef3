/* zshard-plan: the command line of the memory planner. Every number it prints comes from the
 * library's zs_plan_model (the same planner zs_engine_commit refuses with); this program only
 * turns model descriptions into unit sizes and activation bytes, and prints. */
#ifndef ZS_TOOLS_PLAN_TOOL_H
#define ZS_TOOLS_PLAN_TOOL_H

#include <stddef.h>
#include <stdint.h>

#include "common/llama_config.h"
#include "zshard.h"

/* A GPT-2 shape as the GPT-2 example (examples/train_gpt2.c) builds it. */
typedef struct {
  int layers, channels, heads, vocab, max_seq;
} zp_gpt;

/* What the user asked for. */
typedef struct {
  /* The model: a GPT-2 preset or free shape, unit sizes, a bare count, or a safetensors file. */
  const char *preset, *unit_sizes, *safetensors;
  zp_gpt gpt;
  int have_shape; /* --layers / --channels given */
  double params;  /* --params N (0: not given) */
  int units;      /* --units K: split --params evenly */
  /* Activations of the GPT-2 example: micro-batch, sequence, recompute; or bytes given. */
  int batch, seq, recompute;
  size_t activations; /* --activations B for any model */
  /* The configuration. */
  int world, group, stage, prefetch, deterministic, held_units;
  int tp; /* --tp T: tensor-parallel groups of T ranks (Llama models); the plan is per rank, over
             world / T data-parallel ranks (zp_dp_world); --recommend adds the tp all-reduces */
  int sp; /* --sp: with --tp, train_llama --sp 1's sequence parallelism (its activations) */
  int vocab_parallel; /* --vocab-parallel 0|1 (1): train_llama's, the embedding and head split */
  unsigned offload;
  zs_dtype dtype, reduce_dtype;
  int reduce_set;
  zs_device device;
  size_t bucket, max_live;
  size_t budget;         /* --offload-budget: zs_config.offload_budget_bytes (0: none; "free":
                            ZS_BUDGET_FREE) */
  size_t free_bytes;     /* --free: the number a ZS_BUDGET_FREE budget is planned with (0: none) */
  const char *nvme_path; /* --nvme-path: zs_config.nvme_path (NULL: no NVMe tier) */
  int ckpt_async;        /* --ckpt-async: zs_config.ckpt_async (its staging is reported) */
  size_t ckpt_staging;   /* --ckpt-staging-bytes: zs_config.ckpt_staging_bytes (0: none) */
  size_t host_cap;       /* --offload-host-bytes: zs_config.offload_host_bytes (0: none) */
  size_t dev_mem, host_mem; /* per rank; 0: what this machine has */
  /* Optimizer-state precision: zs_config.master (--master fp32|params|remainder|lean) and
     moment_dtype (--moment-dtype fp32|bf16). */
  int master;
  zs_dtype moment_dtype;
  int grad_accum_fp32; /* zs_config.grad_accum_fp32 (--grad-accum-dtype fp32) */
  int optimizer;       /* zs_config.optimizer (--optimizer NAME: zs_optimizer_id) */
  float momentum;      /* zs_config.sgd.momentum (--momentum; default 0.9) */
  /* Output. */
  int json, states_only, recommend;
  double link_gbs, pcie_gbs; /* GB/s (10^9 bytes) */
  const char *freeze;        /* --freeze SPEC: frozen units (zp_model_freeze), NULL = none */
} zp_args;

/* The model as the engine sees it. */
typedef struct {
  int64_t *numel; /* per unit, forward order (owned) */
  int n;
  int64_t total;
  int is_gpt; /* a GPT-2 shape is known: activations can be computed */
  zp_gpt gpt;
  int is_llama; /* a Llama-family config is known (llama): activations can be computed */
  llama_config llama;
  int *frozen;            /* per unit, 1 = frozen (--freeze); NULL when none (owned) */
  int64_t largest_frozen; /* elements of the largest frozen unit, 0 when none */
  /* The units' tensors where the shape is a GPT-2 or Llama one (the examples' own descriptors);
     NULL otherwise. zp_plan plans them with zs_plan_model_units (owned). */
  zs_plan_unit *units;   /* optimizer NULL and frozen 0 here: zp_plan sets them per plan */
  zs_tensor_desc *descs; /* the units' tensors, ZP_MAX_UNIT_TENSORS per unit */
  /* A GPT-2 or Llama shape whose units (a safetensors file's) are not the example's: planned
     from their sizes alone (units NULL). */
  int bare;
} zp_model;

/* Room per unit for the examples' tensors (GPT-2's block has 12, a Llama decoder layer fewer). */
#define ZP_MAX_UNIT_TENSORS 16

/* The data-parallel ranks the planner shards over: world / tp. */
int zp_dp_world(const zp_args *a);
/* Parses argv; 0 ok, 1 help printed, -1 error (printed). */
int zp_args_parse(zp_args *a, int argc, char **argv);
/* Builds the units (and the GPT shape when known); 0 or -1 (printed). */
int zp_model_build(const zp_args *a, zp_model *m);
void zp_model_free(zp_model *m);
/* The elements of nt tensors. */
int64_t zp_desc_numel(const zs_tensor_desc *d, int nt);
/* Unit u's tensors of the GPT-2 example's shape g into d (room for GPT2_MAX_UNIT_TENSORS, at most
   ZP_MAX_UNIT_TENSORS); their count. */
int zp_gpt_unit_descs(const zp_gpt *g, int u, zs_tensor_desc *d);
/* Fills m's units' tensors where its shape is a GPT-2 or Llama one whose units it counted (else
   leaves them NULL); 0 or -1 (out of memory). zp_model_build calls it. */
int zp_model_tensors(zp_model *m);
/* The plan of m under cfg on a->world ranks, world / tp of them data-parallel
   (zs_plan_model_frozen; with the units' tensors zs_plan_model_units_tp, and --optimizer muon
   then plans the examples' grouping: AdamW, the hidden units' matrices in a group on Muon,
   examples/common/muon_rule.h). ZS_OK or the library's status (zs_last_error says why). */
zs_status zp_plan(const zp_args *a, const zp_model *m, const zs_config *cfg, size_t act, size_t dev,
                  size_t host, zs_plan_report *r);
/* zs_plan_placement for m as zp_plan plans it: host[i] = 1 for a unit on the host. */
zs_status zp_placement(const zp_args *a, const zp_model *m, const zs_config *cfg,
                       unsigned char *host);
/* --freeze SPEC: comma-separated unit indexes N or ranges N-M, and for a GPT-2 shape also
   "embedding", "blocks", "ln_f" (the example's units: 0, 1..L, L+1), as train_gpt2 --freeze.
   Sets m->frozen and m->largest_frozen; 0 or -1 (printed). */
int zp_model_freeze(const char *spec, zp_model *m);
/* The GPT-2 example's units of shape g: embedding (padded wte + wpe), L blocks, ln_f. */
int zp_gpt_units(const zp_gpt *g, zp_model *m);
/* Bytes the GPT-2 example allocates for activations at micro-batch B x T in dtype dt
   (examples/gpt2/model.c, gpt2_model_init: every buffer it allocates). */
size_t zp_gpt_activation_bytes(const zp_gpt *g, int B, int T, zs_dtype dt, int recompute);
/* The example's vocabulary padding (examples/gpt2/config.c). */
int zp_gpt_pad_vocab(int vocab);
/* Llama-family models (llama.c): 1 when --model's value is a Llama preset name or a path ending
   in .json; the names of the presets, for messages. */
int zp_llama_is_spec(const char *spec);
const char *zp_llama_preset_names(void);
/* The Llama example's units (examples/common/llama_layout.c) of a preset or config.json (parsed and
   checked by examples/common/llama_config.c at the planned sequence length seq, 0 meaning none
   given, so that a longer sequence than a sliding window is refused as train_llama refuses it, also
   with --model-states-only); sets m->is_llama and m->llama. With tp > 1 the units and the
   activations are one tp rank's (examples/common/llama_layout.h: llama_tp_local, the embedding
   and head split over the vocabulary when vocab_parallel and tp divides it). 0 or -1
   (printed). */
int zp_llama_units(const char *spec, int seq, int tp, int vocab_parallel, zp_model *m);
/* The example's activation bytes (examples/common/llama_activations.h) at micro-batch B x T, with
   sequence parallelism over sp ranks (1: none), after checking that T is trainable (positions,
   sliding window, a multiple of sp); 0 or -1 (printed). */
int zp_llama_activations(const zp_model *m, int B, int T, zs_dtype dt, int recompute, int sp,
                         size_t *out);
/* Units (and a GPT-2 shape from config.json beside it, if any) of a safetensors file. */
int zp_safetensors_units(const char *path, zp_model *m);
/* Memory of this machine per rank: the first GPU's total (CUDA) and MemAvailable of the host, the
   host divided among `ranks` (those of this machine). 0 when unknown. */
size_t zp_sys_gpu_bytes(void);
size_t zp_sys_host_bytes(void);
/* The config a plan of a uses (stage, offload, dtypes, group ...). */
void zp_config(const zp_args *a, int stage, unsigned offload, zs_config *c);
/* Predicted seconds of one step's communication (see cost.c). */
double zp_step_seconds(const zp_args *a, const zp_model *m, int stage, unsigned offload);
/* --recommend: every configuration that fits, fastest first. 0 or -1. */
int zp_recommend(const zp_args *a, const zp_model *m, size_t act, size_t dev, size_t host);
/* Prints one plan (table or JSON) of cfg; with an offload budget also its placement. */
void zp_print(const zp_args *a, const zp_model *m, const zs_config *cfg, const zs_plan_report *r,
              size_t dev, size_t host);
/* "opt+params" etc. */
const char *zp_offload_name(unsigned off);

#endif
