/* --recommend: every configuration that fits, ordered by the predicted time of one step's
 * communication. Volumes per step are the ZeRO paper's (Rajbhandari et al., 2020, section 7):
 * stages 0-2 move 2 psi per rank (an all-reduce, or a reduce-scatter of the gradients and an
 * all-gather of the updated params), stage 3 moves 3 psi (the params gathered for the forward and
 * again for the backward, the gradients reduce-scattered). Time follows nccl-tests' bus-bandwidth
 * convention: a collective over n ranks of S bytes takes S * (n-1)/n / busbw (an all-reduce
 * 2 S * (n-1)/n). With hybrid sharding (shard groups of G of the W ranks) the gradient shards are
 * also all-reduced across the W/G replicas. Offload adds host<->device copies at the PCIe rate:
 * the gradient shard down and the updated params up each step (optimizer), and the param shard up
 * for both gathers instead of the latter (params). Compute and the CPU optimizer are not modelled:
 * the order is by what the stage changes, communication. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

const char *zp_offload_name(unsigned off) {
  return off == 0 ? "none" : off == ZS_OFFLOAD_OPTIMIZER ? "opt" : "opt+params";
}

void zp_config(const zp_args *a, int stage, unsigned offload, zs_config *c) {
  zs_config_default(c);
  c->stage = stage;
  c->offload = offload;
  c->shard_group_size = a->group;
  c->param_dtype = a->dtype;
  c->reduce_dtype = a->reduce_dtype;
  c->device = a->device;
  c->prefetch_units = a->prefetch;
  c->deterministic = a->deterministic;
  c->bucket_bytes = a->bucket;
  c->max_live_bytes = a->max_live;
  c->held_units = a->held_units;
  c->master = a->master;
  c->moment_dtype = a->moment_dtype;
  c->grad_accum_fp32 = a->grad_accum_fp32 && a->dtype == ZS_BF16; /* fp32 params: fp32 already */
  c->optimizer = a->optimizer;
  c->sgd.momentum = a->momentum;
  c->tp_size = a->tp; /* the plans are over a->world ranks, world / tp data-parallel */
  /* "free" is decided at commit: --free BYTES plans with that number, else ZS_BUDGET_FREE itself
     (a budget no model exceeds) */
  c->offload_budget_bytes =
      a->budget == ZS_BUDGET_FREE && a->free_bytes ? a->free_bytes : a->budget;
  c->offload_host_bytes = a->host_cap;
  c->ckpt_async = a->ckpt_async;
  c->ckpt_staging_bytes = a->ckpt_staging;
  /* The NVMe tier takes host-tier units only: configurations without one (the alternatives
     --recommend tries) plan without it. */
  c->nvme_path = offload || a->budget ? a->nvme_path : NULL;
}

double zp_step_seconds(const zp_args *a, const zp_model *m, int stage, unsigned offload) {
  const double psi = (double)m->total, pb = a->dtype == ZS_BF16 ? 2 : 4;
  const double rb = a->reduce_dtype == ZS_BF16 ? 2 : 4;
  const double W = zp_dp_world(a), G = a->group ? a->group : W, R = W / G;
  const double link = a->link_gbs * 1e9, pcie = a->pcie_gbs * 1e9;
  double comm;
  if (stage == 0)
    comm = 2 * psi * rb * (W - 1) / W; /* all-reduce over the world */
  else
    comm = ((stage == 3 ? 2 : 1) * psi * pb + psi * rb) * (G - 1) / G +
           2 * (psi / G) * rb * (R - 1) / R;
  if (a->tp > 1 && m->is_llama) {
    /* train_llama's tp sums: 4 all-reduces of the activations (B x seq x C in the compute dtype:
       fp32 on the CPU device) per layer, 6 when recompute runs each forward twice, and with a
       vocabulary-parallel head 2 more (the embedding's output, the head's input gradient) and
       the all-gather of the loss's parts (3 fp32 a token from each rank); a ring moves
       2 (T - 1) / T of an all-reduce and (T - 1) / T of an all-gather's output. */
    const int seq = a->seq ? a->seq : (m->llama.max_pos < 2048 ? m->llama.max_pos : 2048);
    const double T = a->tp, cb = a->device == ZS_DEVICE_CPU ? 4 : pb;
    const double tokens = (double)a->batch * seq, act = tokens * m->llama.hidden * cb;
    const int vp = m->llama.vocab_part > 0;
    comm += (m->llama.layers * (a->recompute ? 6 : 4) + 2 * vp) * act * 2 * (T - 1) / T;
    comm += vp * 3 * tokens * 4 * (T - 1);
  }
  double host = 0;
  if (offload & ZS_OFFLOAD_OPTIMIZER) host += 2 * psi / G * pb;
  if (offload & ZS_OFFLOAD_PARAMS) host += psi / G * pb; /* two gathers' uploads, not one publish */
  return comm / link + host / pcie;
}

typedef struct {
  int stage;
  unsigned offload;
  double seconds;
  zs_plan_report r;
} cand;

static int by_time(const void *x, const void *y) {
  const cand *a = x, *b = y;
  if (a->seconds != b->seconds) return a->seconds < b->seconds ? -1 : 1;
  if (a->r.device_total != b->r.device_total) return a->r.device_total < b->r.device_total ? -1 : 1;
  return a->r.host_total < b->r.host_total ? -1 : a->r.host_total > b->r.host_total;
}

int zp_recommend(const zp_args *a, const zp_model *m, size_t act, size_t dev, size_t host) {
  static const unsigned offs[3] = {0, ZS_OFFLOAD_OPTIMIZER,
                                   ZS_OFFLOAD_OPTIMIZER | ZS_OFFLOAD_PARAMS};
  cand c[12];
  int n = 0;
  for (int st = 0; st <= 3; st++)
    for (int o = 0; o < 3; o++) {
      zs_config cfg;
      zp_config(a, st, offs[o], &cfg);
      cand *k = &c[n];
      if (zp_plan(a, m, &cfg, act, dev, host, &k->r) != ZS_OK || !k->r.fits)
        continue; /* not a plan (offload needs sharding), or does not fit */
      k->stage = st;
      k->offload = offs[o];
      k->seconds = zp_step_seconds(a, m, st, offs[o]);
      n++;
    }
  qsort(c, (size_t)n, sizeof c[0], by_time);
  if (a->json) {
    printf("{\"recommend\": [");
    for (int i = 0; i < n; i++)
      printf("%s\n  {\"stage\": %d, \"offload\": \"%s\", \"step_comm_seconds\": %.6g, "
             "\"device_total\": %zu, \"host_total\": %zu}",
             i ? "," : "", c[i].stage, zp_offload_name(c[i].offload), c[i].seconds,
             c[i].r.device_total, c[i].r.host_total);
    printf("%s]}\n", n ? "\n" : "");
    return 0;
  }
  printf("configurations that fit %d rank(s) (shard group %d), fastest first (link %.0f GB/s, "
         "PCIe %.0f GB/s):\n",
         a->world, a->group ? a->group : zp_dp_world(a), a->link_gbs, a->pcie_gbs);
  printf("%-6s %-11s %14s %16s %16s\n", "stage", "offload", "comm s/step", "device B/rank",
         "host B/rank");
  for (int i = 0; i < n; i++)
    printf("%-6d %-11s %14.6f %16zu %16zu\n", c[i].stage, zp_offload_name(c[i].offload),
           c[i].seconds, c[i].r.device_total, c[i].r.host_total);
  if (!n) printf("nothing fits\n");
  return 0;
}
