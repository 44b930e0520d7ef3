/* Printing one plan: a table for people, or JSON ({"per_rank": {...}, "fits": ...}). */
#include <stdio.h>
#include <stdlib.h>

#include "tool.h"

/* The verdict as a JSON string (it has no quotes or backslashes, but be safe). */
static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++)
    if (*s == '"' || *s == '\\')
      printf("\\%c", *s);
    else if ((unsigned char)*s >= 0x20)
      putchar(*s);
  putchar('"');
}

static void row(const char *name, size_t b, int decimal) {
  if (decimal)
    printf("  %-22s %20zu  %10.1f GB\n", name, b, (double)b / 1e9);
  else
    printf("  %-22s %20zu  %10.1f MiB\n", name, b, (double)b / (1024.0 * 1024));
}

/* The units an offload budget places on the host, by index ("0 3 7"), as JSON numbers when json;
   nothing without a budget or when the placement cannot be had. */
static void host_units(const zp_args *a, const zp_model *m, const zs_config *cfg, int json) {
  unsigned char *host = calloc((size_t)m->n, 1);
  if (!host || zp_placement(a, m, cfg, host) != ZS_OK) {
    free(host);
    return;
  }
  int k = 0;
  for (int i = 0; i < m->n; i++)
    if (host[i]) printf("%s%d", json ? (k++ ? ", " : "") : " ", i);
  free(host);
}

void zp_print(const zp_args *a, const zp_model *m, const zs_config *cfg, const zs_plan_report *r,
              size_t dev, size_t host) {
  const size_t states = r->params + r->grads + r->optimizer + r->host_pinned;
  if (a->json) {
    if (a->states_only)
      printf("{\"per_rank\": {\"params\": %zu, \"grads\": %zu, \"optimizer\": %zu, "
             "\"host_pinned\": %zu, \"model_states\": %zu}, \"psi\": %lld}\n",
             r->params, r->grads, r->optimizer, r->host_pinned, states, (long long)m->total);
    else {
      printf("{\"per_rank\": {\"params\": %zu, \"grads\": %zu, \"optimizer\": %zu, \"buffers\": "
             "%zu, \"activations\": %zu, \"host_pinned\": %zu, \"device_total\": %zu, "
             "\"host_total\": %zu}, \"fits\": %s, \"verdict\": ",
             r->params, r->grads, r->optimizer, r->buffers, r->activations, r->host_pinned,
             r->device_total, r->host_total, r->fits ? "true" : "false");
      json_str(r->verdict);
      printf(", \"available\": {\"device\": %zu, \"host\": %zu}", dev, host);
      if (a->budget == ZS_BUDGET_FREE) /* "free": decided at commit; "free_bytes": --free */
        printf(", \"placement\": {\"budget\": \"free\", \"free_bytes\": %zu, \"budget_floor\": "
               "%zu, \"host_units\": [",
               a->free_bytes, r->budget_floor);
      else if (a->budget)
        printf(", \"placement\": {\"budget\": %zu, \"budget_floor\": %zu, \"host_units\": [",
               a->budget, r->budget_floor);
      if (a->budget) {
        host_units(a, m, cfg, 1);
        printf("]}");
      }
      if (cfg->nvme_path)
        printf(", \"nvme\": {\"path\": \"%s\", \"host_cap\": %zu, \"units\": %zu, \"disk_bytes\": "
               "%zu, \"staging_bytes\": %zu}",
               cfg->nvme_path, cfg->offload_host_bytes, r->nvme_units, r->disk_bytes,
               r->nvme_staging);
      if (cfg->ckpt_async) printf(", \"ckpt_staging\": %zu", r->ckpt_staging);
      printf("}\n");
    }
    return;
  }
  printf("zshard-plan: %lld params in %d unit(s); stage %d, offload %s, %d rank(s), shard group "
         "%d, %s params, %s grads, %s device\n",
         (long long)m->total, m->n, a->stage, zp_offload_name(a->offload), a->world,
         a->group ? a->group : zp_dp_world(a), a->dtype == ZS_BF16 ? "bf16" : "fp32",
         a->dtype == ZS_BF16 && !a->grad_accum_fp32 ? "bf16" : "fp32",
         a->device == ZS_DEVICE_CUDA ? "cuda" : "cpu");
  if (a->tp > 1)
    printf("tensor parallelism: tp %d x %d data-parallel ranks; the params above are one tp "
           "rank's slices (heads and MLP / %d; norms, embedding and head whole); rank counts "
           "below are data-parallel ranks (times %d for GPUs)\n",
           a->tp, zp_dp_world(a), a->tp, a->tp);
  if (a->states_only) {
    printf("model states per rank (the ZeRO paper's accounting: params, grads, fp32 master + "
           "the optimizer's state):\n");
    row("params", r->params, 1);
    row("grads", r->grads, 1);
    row("optimizer", r->optimizer, 1);
    if (r->host_pinned) row("optimizer/params (host)", r->host_pinned, 1);
    row("model states", states, 1);
    return;
  }
  printf("per rank                                bytes\n");
  row("params", r->params, 0);
  row("grads", r->grads, 0);
  row("optimizer", r->optimizer, 0);
  row("buffers (bound)", r->buffers, 0);
  row("activations", r->activations, 0);
  row("host_pinned", r->host_pinned, 0);
  row("device total", r->device_total, 0);
  row("host total", r->host_total, 0);
  if (cfg->ckpt_async) row("ckpt staging (async)", r->ckpt_staging, 0);
  printf("available per rank: device %zu, host %zu bytes%s\n", dev, host,
         a->device == ZS_DEVICE_CPU ? " (the CPU device draws on host memory for both)" : "");
  if (a->budget == ZS_BUDGET_FREE && !a->free_bytes)
    printf("placement: offload budget free: decided at commit (the least free device memory over "
           "the ranks); planned here as a budget no model exceeds, every unit on the device "
           "(--free BYTES plans with a number; the least that fits: %zu)",
           r->budget_floor);
  else if (a->budget == ZS_BUDGET_FREE)
    printf("placement: offload budget free: decided at commit; planned here with %zu bytes "
           "(--free) (the least that fits: %zu): %zu of %d units' optimizer state%s on the host:",
           a->free_bytes, r->budget_floor, r->host_units, m->n,
           a->stage >= 3 ? " and param shards" : "");
  else if (a->budget)
    printf("placement: offload budget %zu bytes (the least that fits: %zu): %zu of %d units' "
           "optimizer state%s on the host:",
           a->budget, r->budget_floor, r->host_units, m->n,
           a->stage >= 3 ? " and param shards" : "");
  if (a->budget) {
    host_units(a, m, cfg, 0);
    printf("\n");
  }
  if (cfg->nvme_path)
    printf("nvme tier: %zu of %d units' optimizer state on disk under %s: %zu disk bytes, %zu "
           "host bytes of staging (in host_pinned), host cap %zu bytes\n",
           r->nvme_units, m->n, cfg->nvme_path, r->disk_bytes, r->nvme_staging,
           cfg->offload_host_bytes);
  printf("%s\n", r->verdict);
}
