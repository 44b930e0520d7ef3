/* Configuration: defaults, the tunables table (environment variables, resolved at engine
 * creation) and validation. */
#include "base/config.h"

#include "base/opt_shape.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "zshard_facts.h"

/* Every environment variable libzshard reads is in this one table (README, "Configuration
   knobs", lists exactly these; the rest of src/ reads them through zs_env()). Two kinds of
   entries:
   - a zs_config field (TUN): zs_config_default writes the "unset" sentinel into it (ZS_UNSET, or
     ZS_UNSET_SIZE for size_t fields), as NCCL_CONFIG_INITIALIZER writes NCCL_CONFIG_UNDEF_INT: a
     field still unset at zs_engine_create takes its variable, else its default; any value the
     program wrote wins, even one equal to the default. These variables are parsed strictly here:
     garbage is an error, never silently ignored.
   - a path field (PATH: a const char *, unset = NULL): a field still NULL at zs_engine_create
     takes its variable's string (getenv's, not copied: valid while the environment is not
     changed), else stays NULL (no default); any string the program wrote wins.
   - a process-wide setting outside zs_config (ENV): read through zs_env() by the code that
     uses it, which parses it (its rules are in README and at the reader). */
typedef enum { T_INT, T_SIZE, T_DOUBLE, T_TEXT, T_PATH } zs_tunable_kind;
typedef struct {
  const char *env;
  const char *field; /* NULL for T_TEXT */
  zs_tunable_kind kind;
  size_t offset;    /* of the field in zs_config */
  double lo, hi;    /* accepted range */
  double dflt;      /* the default zs_config_default writes */
  const char *word; /* T_SIZE: a word the variable may hold instead of a number, which sets the
                       field to ZS_BUDGET_FREE (NULL: numbers only) */
} zs_tunable;

#define TUN(env, f, kind, lo, hi, d)                                                               \
  { env, #f, kind, offsetof(zs_config, f), lo, hi, d, NULL }
#define TUNW(env, f, lo, hi, d, word)                                                              \
  { env, #f, T_SIZE, offsetof(zs_config, f), lo, hi, d, word }
#define PATH(env, f)                                                                               \
  { env, #f, T_PATH, offsetof(zs_config, f), 0, 0, 0, NULL }
#define ENV(env)                                                                                   \
  { env, NULL, T_TEXT, 0, 0, 0, 0, NULL }
static const zs_tunable zs_tunables[] = {
    TUN("ZS_STAGE", stage, T_INT, 0, 3, 3),
    TUN("ZS_PREFETCH_UNITS", prefetch_units, T_INT, 0, 1 << 20, 1),
    TUN("ZS_DETERMINISTIC", deterministic, T_INT, 0, 1, 0),
    TUN("ZS_COMM_TIMEOUT_S", comm_timeout_s, T_DOUBLE, 1e-3, 1e9, 300.0), /* also comm_handle.c */
    TUN("ZS_BUCKET_BYTES", bucket_bytes, T_SIZE, 0, 1e18, 0),
    TUN("ZS_MAX_LIVE_BYTES", max_live_bytes, T_SIZE, 0, 1e18, 0),
    TUN("ZS_OFFLOAD_HOST_BYTES", offload_host_bytes, T_SIZE, 0, 1e18, 0),
    TUN("ZS_OFFLOAD_THREADS", offload_threads, T_INT, 0, 4096, 0),
    TUN("ZS_OFFLOAD_CHUNK", offload_chunk, T_SIZE, 1, 1e15, 1 << 22),
    TUN("ZS_OFFLOAD_ALLOW_UNPINNED", offload_allow_unpinned, T_INT, 0, 1, 0),
    TUN("ZS_CKPT_KEEP", ckpt_keep, T_INT, 0, 1 << 20, 2),
    TUNW("ZS_OFFLOAD_BUDGET_BYTES", offload_budget_bytes, 0, 1e18, 0, "free"), /* ZS_BUDGET_FREE */
    PATH("ZS_NVME_PATH", nvme_path),                  /* the NVMe tier's directory (placement.h) */
    TUN("ZS_COMM_CHECK", comm_check, T_INT, 0, 1, 1), /* also comm/sig.c, for raw groups */
    PATH("ZS_FLIGHT_DIR", flight_dir),                /* engine/flight_dump.c */
    TUN("ZS_FLIGHT_ENTRIES", flight_entries, T_INT, 0, 1 << 20, 256),
    TUN("ZS_CKPT_ASYNC", ckpt_async, T_INT, 0, 1, 0),
    TUN("ZS_CKPT_STAGING_BYTES", ckpt_staging_bytes, T_SIZE, 0, 1e18, 0),
    TUN("ZS_CKPT_KEEP_EVERY", ckpt_keep_every, T_INT, 0, 1 << 30, 0),
    TUN("ZS_CKPT_DIRECT", ckpt_direct, T_INT, 0, 1, 1),
    TUN("ZS_CKPT_WRITE_RATE", ckpt_write_rate, T_SIZE, 0, 1e18, 0),
    ENV("ZS_COMM"),              /* comm/coll.c: the collective backend */
    ENV("ZS_COMM_DRAIN_S"),      /* comm/backoff.c: destroy's wait for abandoned requests */
    ENV("ZS_OFFLOAD_NUMA_NODE"), /* offload/numa_place.c: the offload NUMA node */
    ENV("ZS_ADAMW_ISA"),         /* optim/adamw/cpu/adamw_dispatch.c: force a CPU AdamW path */
    ENV("ZS_ADAMW_THREADS"),     /* optim/adamw/adamw_mt.c: threads of each engine's AdamW pool */
    /* zs_comm_init_env (comm/bootstrap_env.c): the launcher's (torchrun's) variables */
    ENV("RANK"),
    ENV("WORLD_SIZE"),
    ENV("LOCAL_RANK"),
    ENV("LOCAL_WORLD_SIZE"),
    ENV("MASTER_ADDR"),
    ENV("MASTER_PORT"),
    ENV("OMPI_COMM_WORLD_SIZE"), /* comm/bootstrap_mpi.c: a launcher started this rank */
    ENV("PMIX_RANK"),
    ENV("PMI_RANK"),
    ENV("SLURM_PROCID"),
};
#define ZS_NTUNABLES (sizeof zs_tunables / sizeof zs_tunables[0])
_Static_assert(ZS_NTUNABLES <= ZS_CONFIG_NORIGINS, "raise ZS_CONFIG_NORIGINS (base/config.h)");

static double get_field(const zs_config *c, const zs_tunable *t) {
  const char *p = (const char *)c + t->offset;
  if (t->kind == T_INT) return (double)*(const int *)p;
  if (t->kind == T_SIZE) return (double)*(const size_t *)p;
  return *(const double *)p;
}

/* 1 when the field holds the "unset" sentinel zs_config_default wrote. */
static int is_unset(const zs_config *c, const zs_tunable *t) {
  const char *p = (const char *)c + t->offset;
  if (t->kind == T_INT) return *(const int *)p == ZS_UNSET;
  if (t->kind == T_SIZE) return *(const size_t *)p == ZS_UNSET_SIZE;
  return *(const double *)p == (double)ZS_UNSET;
}

static void set_unset(zs_config *c, const zs_tunable *t) {
  char *p = (char *)c + t->offset;
  if (t->kind == T_INT)
    *(int *)p = ZS_UNSET;
  else if (t->kind == T_SIZE)
    *(size_t *)p = ZS_UNSET_SIZE;
  else
    *(double *)p = (double)ZS_UNSET;
}

static void set_field(zs_config *c, const zs_tunable *t, double v) {
  char *p = (char *)c + t->offset;
  if (t->kind == T_INT)
    *(int *)p = (int)v;
  else if (t->kind == T_SIZE)
    *(size_t *)p = (size_t)v;
  else
    *(double *)p = v;
}

void zs_config_default(zs_config *c) {
  if (!c) return;
  memset(c, 0, sizeof *c);
  c->struct_size = sizeof *c;
  c->struct_version = ZS_CONFIG_VERSION;
  c->shard_params = c->shard_grads = c->shard_optimizer = ZS_SHARD_AS_STAGE;
  c->device = ZS_DEVICE_CPU;
  c->device_index = -1;
  c->param_dtype = ZS_F32;
  c->reduce_dtype = ZS_F32;
  c->tp_size = 1;
  c->adamw.lr = 1e-3f;
  c->adamw.beta1 = 0.9f;
  c->adamw.beta2 = 0.999f;
  c->adamw.eps = 1e-8f;
  c->adamw.weight_decay = 0.01f;
  c->adamw.max_grad_norm = 0.0f; /* no clipping, as torch.optim.AdamW (docs/OPTIMIZER.md §3) */
  c->muon.momentum = 0.95f;      /* torch.optim.Muon's */
  c->muon.nesterov = 1;
  c->muon.ns_steps = 5;
  c->adafactor.beta2_decay = -0.8f; /* torch.optim.Adafactor's, eps1 its float32 default */
  c->adafactor.eps1 = 1.1920929e-07f;
  c->adafactor.eps2 = 1e-3f;
  c->adafactor.d = 1.0f;
  for (size_t i = 0; i < ZS_NTUNABLES; i++)
    if (zs_tunables[i].kind != T_TEXT && zs_tunables[i].kind != T_PATH)
      set_unset(c, &zs_tunables[i]); /* a path's unset is NULL: the memset */
}

/* Parses one variable strictly into *v (an integer for T_INT/T_SIZE). */
static zs_status parse_env(const zs_tunable *t, const char *s, double *v) {
  char *end = NULL;
  errno = 0;
  double x;
  if (t->kind == T_DOUBLE) {
    x = strtod(s, &end);
  } else {
    long long n = strtoll(s, &end, 10);
    x = (double)n;
  }
  if (!*s || !end || *end != '\0' || errno == ERANGE || !(x >= t->lo && x <= t->hi))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "environment variable %s='%s' is not %s in [%g, %g]%s%s%s (for zs_config.%s): "
                  "fix or unset it",
                  t->env, s, t->kind == T_DOUBLE ? "a number" : "an integer", t->lo, t->hi,
                  t->word ? " or '" : "", t->word ? t->word : "", t->word ? "'" : "", t->field);
  *v = x;
  return ZS_OK;
}

/* The caller's struct as this library's: refused unless zs_config_default filled it (its size and
   version tell how much of it exists; nothing past it is read); fields beyond an older, smaller
   struct take zs_config_default's values. Tunables stay as the caller left them (set or unset). */
/* The bytes of zs_config's fields in version v's struct: a program built with that header passes
   a struct_size that may include tail padding where a later version put a field (version 2's
   ended in 4 bytes of padding where `optimizer` now is), so only these bytes are its own. */
static size_t version_bytes(unsigned v) {
  if (v < 2) return offsetof(zs_config, comm_check);
  if (v < 3) return offsetof(zs_config, optimizer);
  if (v < 4) return offsetof(zs_config, grad_accum_fp32);
  if (v < 5) return offsetof(zs_config, muon);
  if (v < 6) return offsetof(zs_config, flight_dir);
  if (v < 7) return offsetof(zs_config, ckpt_async);
  if (v < 8) return offsetof(zs_config, ckpt_keep_every);
  if (v < 9) return offsetof(zs_config, tp_size);
  if (v < 10) return offsetof(zs_config, ckpt_direct);
  return sizeof(zs_config);
}

static zs_status complete_raw(const zs_config *in, zs_config *out) {
  if (in->struct_size == 0 || in->struct_version == 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "the config was not filled by zs_config_default (struct_size %zu, "
                  "struct_version %u): call zs_config_default(&cfg) first, then change only the "
                  "fields you mean; a struct set by hand (memset) cannot say how large it is",
                  in->struct_size, in->struct_version);
  if (in->struct_size < offsetof(zs_config, stage) + sizeof(int))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "config struct_size %zu is smaller than any zs_config: fill it with "
                  "zs_config_default",
                  in->struct_size);
  zs_config c;
  zs_config_default(&c);
  const size_t own = version_bytes(in->struct_version);
  memcpy(&c, in, in->struct_size < own ? in->struct_size : own);
  c.struct_size = sizeof c;
  c.struct_version = ZS_CONFIG_VERSION;
  *out = c;
  return ZS_OK;
}

zs_status zs_config_complete(const zs_config *in, zs_config *out) {
  zs_config c;
  ZS_CHECK(complete_raw(in, &c));
  for (size_t i = 0; i < ZS_NTUNABLES; i++)
    if (zs_tunables[i].kind != T_TEXT && zs_tunables[i].kind != T_PATH &&
        is_unset(&c, &zs_tunables[i]))
      set_field(&c, &zs_tunables[i], zs_tunables[i].dflt);
  if (c.offload_chunk == 0) c.offload_chunk = (size_t)1 << 22; /* 0: the default */
  *out = c;
  return ZS_OK;
}

/* A path tunable: the program's string, else the variable's (s, NULL when unset), else NULL;
   appends "field=value (from)" to sources. */
static zs_origin resolve_path(zs_config *c, const zs_tunable *t, const char *s, char *sources,
                              size_t n, size_t *used) {
  const char **f = (const char **)(void *)((char *)c + t->offset);
  const char *from = "program";
  zs_origin o = ZS_ORIGIN_PROGRAM;
  if (!*f) {
    *f = s;
    from = s ? t->env : "default";
    o = s ? ZS_ORIGIN_ENV : ZS_ORIGIN_DEFAULT;
  }
  if (sources && *used < n) {
    int k = snprintf(sources + *used, n - *used, "%s%s=%s (%s)", *used ? ", " : "", t->field,
                     *f ? *f : "none", from);
    *used = k > 0 ? *used + (size_t)k : *used;
  }
  return o;
}

zs_status zs_config_resolve(const zs_config *in, zs_config *out, char *sources, size_t n) {
  return zs_config_resolve_origins(in, out, sources, n, NULL);
}

int zs_config_field_index(const char *field) {
  for (size_t i = 0; field && i < ZS_NTUNABLES; i++)
    if (zs_tunables[i].field && !strcmp(zs_tunables[i].field, field)) return (int)i;
  return -1;
}

zs_status zs_config_resolve_origins(const zs_config *in, zs_config *out, char *sources, size_t n,
                                    unsigned char origins[ZS_CONFIG_NORIGINS]) {
  zs_config c;
  ZS_CHECK(complete_raw(in, &c));
  if (origins) memset(origins, ZS_ORIGIN_DEFAULT, ZS_CONFIG_NORIGINS);
  size_t used = 0;
  if (sources && n) sources[0] = '\0';
  for (size_t i = 0; i < ZS_NTUNABLES; i++) {
    const zs_tunable *t = &zs_tunables[i];
    if (t->kind == T_TEXT) continue;
    const char *s = getenv(t->env);
    if (s && !*s) s = NULL; /* set but empty: unset */
    if (t->kind == T_PATH) {
      const zs_origin o = resolve_path(&c, t, s, sources, n, &used);
      if (origins) origins[i] = (unsigned char)o;
      continue;
    }
    const char *from = "program";
    zs_origin o = ZS_ORIGIN_PROGRAM;
    if (is_unset(&c, t)) {
      double v = t->dflt;
      from = "default";
      o = ZS_ORIGIN_DEFAULT;
      if (s && t->word && strcmp(s, t->word) == 0) {
        *(size_t *)(void *)((char *)&c + t->offset) = ZS_BUDGET_FREE;
        from = t->env;
        o = ZS_ORIGIN_ENV;
      } else {
        if (s) {
          ZS_CHECK(parse_env(t, s, &v));
          from = t->env;
          o = ZS_ORIGIN_ENV;
        }
        set_field(&c, t, v);
      }
    }
    if (origins) origins[i] = (unsigned char)o;
    if (sources && used < n) {
      const double v = get_field(&c, t);
      int k =
          t->word && *(const size_t *)(const void *)((const char *)&c + t->offset) == ZS_BUDGET_FREE
              ? snprintf(sources + used, n - used, "%s%s=%s (%s)", used ? ", " : "", t->field,
                         t->word, from)
          : t->kind == T_DOUBLE ? snprintf(sources + used, n - used, "%s%s=%g (%s)",
                                           used ? ", " : "", t->field, v, from)
                                : snprintf(sources + used, n - used, "%s%s=%.0f (%s)",
                                           used ? ", " : "", t->field, v, from);
      used = k > 0 ? used + (size_t)k : used;
    }
  }
  if (c.offload_chunk == 0) c.offload_chunk = (size_t)1 << 22; /* 0: the default */
  *out = c;
  return ZS_OK;
}

const char *zs_env(const char *name) {
  for (size_t i = 0; i < ZS_NTUNABLES; i++)
    if (!strcmp(zs_tunables[i].env, name)) return getenv(name);
  return NULL; /* not in the table: not a variable of this library */
}

/* master = ZS_MASTER_LEAN's needs: bf16 params (the master). It runs on every tier the other
   modes run on (offload bits, offload budget: m and v move, the params stay the master). */
static zs_status zs_config_validate_lean(const zs_config *c) {
  if (c->master != ZS_MASTER_LEAN) return ZS_OK;
  if (c->param_dtype != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "master = ZS_MASTER_LEAN needs param_dtype ZS_BF16 (the bf16 params are the "
                  "master): set param_dtype = ZS_BF16, or master = ZS_MASTER_PARAMS for fp32 "
                  "params without a copy");
  return ZS_OK;
}

/* The remainder master (ZS_MASTER_REMAINDER): bf16 compute copy + 16-bit remainder: bf16 params.
   It runs on every tier the other modes run on (the remainder moves with m and v). */
static zs_status zs_config_validate_remainder(const zs_config *c) {
  if (c->master != ZS_MASTER_REMAINDER) return ZS_OK;
  if (c->param_dtype != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "master = ZS_MASTER_REMAINDER needs param_dtype ZS_BF16 (the remainder completes "
                  "bf16 params to the fp32 master): set param_dtype = ZS_BF16, or master = "
                  "ZS_MASTER_FP32 (or ZS_MASTER_PARAMS with fp32 params)");
  return ZS_OK;
}

/* The NVMe tier's combinations (zshard.h, nvme_path): what this version runs, else a sentence. */
static zs_status validate_nvme(const zs_config *c, int host_tier) {
  if (!*c->nvme_path)
    return zs_err(ZS_ERR_INVALID_ARG, "nvme_path is empty: use NULL (no NVMe tier) or a directory "
                                      "on a local disk (not tmpfs)");
  if (!host_tier)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "nvme_path '%s' without a host tier: the NVMe tier takes the optimizer state "
                  "of offloaded units; set offload = ZS_OFFLOAD_OPTIMIZER (or an "
                  "offload_budget_bytes), or nvme_path = NULL",
                  c->nvme_path);
  if (!c->offload_host_bytes || c->offload_host_bytes == ZS_UNSET_SIZE)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "nvme_path '%s' without offload_host_bytes: units go to the NVMe tier only "
                  "past the host budget; set offload_host_bytes (ZS_OFFLOAD_HOST_BYTES) to the "
                  "host bytes the offloaded state may hold, or nvme_path = NULL",
                  c->nvme_path);
  return ZS_OK;
}

zs_status zs_config_validate(const zs_config *c) {
  if (!c) return zs_err(ZS_ERR_INVALID_ARG, "config is NULL: fill one with zs_config_default()");
  if (c->ckpt_keep_every != ZS_UNSET && c->ckpt_keep_every < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "ckpt_keep_every %d: use 0 (none) or N to also keep every checkpoint numbered a "
                  "multiple of N",
                  c->ckpt_keep_every);
  if (c->ckpt_async != ZS_UNSET && c->ckpt_async != 0 && c->ckpt_async != 1)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "ckpt_async %d: use 0 (zs_engine_save returns committed) "
                  "or 1 (it returns once staged)",
                  c->ckpt_async);
  if (c->flight_entries != ZS_UNSET && (c->flight_entries < 0 || c->flight_entries > (1 << 20)))
    return zs_err(ZS_ERR_INVALID_ARG, "flight_entries %d is not in 0..%d", c->flight_entries,
                  1 << 20);
  if (c->flight_dir && !*c->flight_dir)
    return zs_err(ZS_ERR_INVALID_ARG, "flight_dir is empty: use NULL (no flight record) or a "
                                      "directory");
  if (c->stage < 0 || c->stage > 3)
    return zs_err(ZS_ERR_INVALID_ARG, "stage %d is not a stage: use 0..3", c->stage);
  if (c->device != ZS_DEVICE_CPU && c->device != ZS_DEVICE_CUDA)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "device %d is not a device: use ZS_DEVICE_CPU or ZS_DEVICE_CUDA", (int)c->device);
  if (c->param_dtype != ZS_F32 && c->param_dtype != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG, "param_dtype %d is not a dtype: use ZS_F32 or ZS_BF16",
                  (int)c->param_dtype);
  if (c->reduce_dtype != ZS_F32 && c->reduce_dtype != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG, "reduce_dtype %d is not a dtype: use ZS_F32 or ZS_BF16",
                  (int)c->reduce_dtype);
  if (c->offload & ~(unsigned)(ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS))
    return zs_err(ZS_ERR_INVALID_ARG,
                  "offload 0x%x has unknown bits: use ZS_OFFLOAD_OPTIMIZER | "
                  "ZS_OFFLOAD_PARAMS",
                  c->offload);
  const int sw[3] = {c->shard_params, c->shard_grads, c->shard_optimizer};
  static const char *const swn[3] = {"shard_params", "shard_grads", "shard_optimizer"};
  for (int i = 0; i < 3; i++)
    if (sw[i] != ZS_SHARD_AS_STAGE && sw[i] != ZS_SHARD_YES && sw[i] != ZS_SHARD_NO)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "%s %d: use ZS_SHARD_YES, ZS_SHARD_NO or ZS_SHARD_AS_STAGE (0)", swn[i], sw[i]);
  if (c->ckpt_keep < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "ckpt_keep %d: use 0 (keep every checkpoint) or the number "
                  "of newest checkpoints to keep",
                  c->ckpt_keep);
  if (c->offload_threads < 0 || c->offload_threads > 4096)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "offload_threads %d: use 0 (this rank's share of the node's "
                  "cores) .. 4096",
                  c->offload_threads);
  if (c->offload_allow_unpinned != 0 && c->offload_allow_unpinned != 1)
    return zs_err(ZS_ERR_INVALID_ARG, "offload_allow_unpinned %d: use 0 or 1",
                  c->offload_allow_unpinned);
  if (c->prefetch_units < 0)
    return zs_err(ZS_ERR_INVALID_ARG, "prefetch_units %d is negative: use 0 (none) or more",
                  c->prefetch_units);
  if (c->held_units < 0 || c->held_units > 1 << 20)
    return zs_err(ZS_ERR_INVALID_ARG, "held_units %d: use 0 (the default, 2) .. 2^20",
                  c->held_units);
  if (c->tp_size < 1 || c->tp_size > 1 << 16)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "tp_size %d: use 1 (no tensor parallelism) or the size of a tensor-parallel "
                  "group, a divisor of the world size",
                  c->tp_size);
  if (c->shard_group_size < 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "shard_group_size %d is negative: use 0 (the world) or a "
                  "divisor of the world size",
                  c->shard_group_size);
  if (!(c->comm_timeout_s > 0) || !isfinite(c->comm_timeout_s))
    return zs_err(ZS_ERR_INVALID_ARG, "comm_timeout_s %g must be a positive number of seconds",
                  c->comm_timeout_s);
  if (!isfinite(c->adamw.lr) || c->adamw.lr < 0)
    return zs_err(ZS_ERR_INVALID_ARG, "optim.lr %g must be finite and >= 0", (double)c->optim.lr);
  if (c->grad_accum_fp32 != 0 && c->grad_accum_fp32 != 1)
    return zs_err(ZS_ERR_INVALID_ARG, "grad_accum_fp32 %d: use 0 or 1", c->grad_accum_fp32);
  const zs_opt_entry *oe = zs_opt_entry_of(c);
  if (!oe) {
    char names[256];
    zs_opt_names(names, sizeof names);
    return zs_err(ZS_ERR_INVALID_ARG,
                  "optimizer %d: no optimizer has this id; zs_optimizer_id gives the id of a name "
                  "(%s)",
                  c->optimizer, names);
  }
  if (oe->check) ZS_CHECK(oe->check(c));
  const zs_opt_shape *opt = oe->shape(c);
  if (c->device == ZS_DEVICE_CUDA && !opt->cuda)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "optimizer '%s' has no CUDA kernels: use it on the CPU device", oe->name);
  if (opt->betas && (!(c->optim.beta1 >= 0 && c->optim.beta1 < 1) ||
                     !(c->optim.beta2 >= 0 && c->optim.beta2 < 1)))
    return zs_err(ZS_ERR_INVALID_ARG, "%s betas (%g, %g) must lie in [0, 1)", oe->name,
                  (double)c->optim.beta1, (double)c->optim.beta2);
  if (!(c->adamw.weight_decay >= 0) || !isfinite(c->adamw.weight_decay))
    return zs_err(ZS_ERR_INVALID_ARG, "optim.weight_decay %g must be finite and >= 0",
                  (double)c->adamw.weight_decay);
  if (c->master != ZS_MASTER_FP32 && c->master != ZS_MASTER_PARAMS &&
      c->master != ZS_MASTER_REMAINDER && c->master != ZS_MASTER_LEAN)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "master %d: use ZS_MASTER_FP32 (0), ZS_MASTER_PARAMS, ZS_MASTER_REMAINDER or "
                  "ZS_MASTER_LEAN",
                  c->master);
  ZS_CHECK(zs_config_validate_remainder(c));
  ZS_CHECK(zs_config_validate_lean(c));
  if (c->master == ZS_MASTER_PARAMS && c->param_dtype != ZS_F32)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "master = ZS_MASTER_PARAMS needs param_dtype ZS_F32 (bf16 params cannot hold "
                  "the fp32 master): set param_dtype = ZS_F32 or master = ZS_MASTER_FP32");
  if (c->moment_dtype != ZS_F32 && c->moment_dtype != ZS_BF16)
    return zs_err(ZS_ERR_INVALID_ARG, "moment_dtype %d is not a dtype: use ZS_F32 or ZS_BF16",
                  (int)c->moment_dtype);
  /* The host tier (offload bits, or a budget that may place any unit there) runs the modes of
     src/optim/adamw/host_update.c: every master mode above with either moment dtype. A master mode
     added above stays refused here until it has a host-tier update. */
  const int host_tier =
      c->offload || (c->offload_budget_bytes && c->offload_budget_bytes != ZS_UNSET_SIZE);
  if (host_tier && c->master != ZS_MASTER_FP32 && c->master != ZS_MASTER_PARAMS &&
      c->master != ZS_MASTER_REMAINDER && c->master != ZS_MASTER_LEAN)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "master %d with offload (offload 0x%x or offload_budget_bytes) is not "
                  "supported: the host tier keeps ZS_MASTER_FP32, ZS_MASTER_PARAMS, "
                  "ZS_MASTER_REMAINDER or ZS_MASTER_LEAN state; set offload = 0 and "
                  "offload_budget_bytes = 0, or one of those master modes",
                  c->master, c->offload);
  if (c->nvme_path) ZS_CHECK(validate_nvme(c, host_tier));
  if (c->offload_chunk > (size_t)1e15 && c->offload_chunk != ZS_UNSET_SIZE)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "offload_chunk %zu is too large: use 1..1e15 elements (0: the default, 4Mi)",
                  c->offload_chunk);
  if (isnan(c->adamw.max_grad_norm))
    return zs_err(ZS_ERR_INVALID_ARG, "optim.max_grad_norm is NaN: use > 0 to clip, <= 0 for none");
  return ZS_OK;
}
