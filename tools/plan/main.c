/* zshard-plan: will it fit, and how? See --help, and README "Planning memory". Exit status 0
 * with a plan (whether or not it fits), 2 for bad arguments. */
#include <stdint.h>
#include <stdio.h>

#include "tool.h"

int main(int argc, char **argv) {
  zp_args a;
  int rc = zp_args_parse(&a, argc, argv);
  if (rc) return rc > 0 ? 0 : 2;
  zp_model m;
  if (zp_model_build(&a, &m)) return 2;
  if (zp_model_freeze(a.freeze, &m)) {
    zp_model_free(&m);
    return 2;
  }
  if (m.bare) { /* said, not silent: the plan is the sizes', not the example's tensors' */
    int muon = -1;
    zs_optimizer_id("muon", &muon);
    if (a.optimizer == muon) {
      fprintf(stderr, "zshard-plan: --optimizer muon plans the examples' grouping (Muon on the "
                      "hidden matrices), which needs their tensors, and this file's units are not "
                      "the example's (their sizes differ): plan it with --optimizer adamw\n");
      zp_model_free(&m);
      return 2;
    }
    fprintf(stderr, "zshard-plan: note: this file's units are not the example's (their sizes "
                    "differ): planned from their sizes\n");
  }
  if (!a.held_units && (m.is_gpt || m.is_llama)) a.held_units = 1; /* as the examples hold */
  size_t act = a.activations;
  /* The examples on the CPU device compute in fp32 (the kernels are fp32 only): with bf16 params
     their activations are fp32 and each held unit is widened into an fp32 scratch of params and
     gradients (examples/common/widen.h: slots x 8 bytes x the largest unit's elements). */
  const zs_dtype cdt = a.device == ZS_DEVICE_CPU ? ZS_F32 : a.dtype;
  size_t widen = 0;
  if (cdt != a.dtype && (m.is_gpt || m.is_llama) && !a.states_only) {
    int64_t big = 0;
    for (int u = 0; u < m.n; u++)
      if (m.numel[u] > big) big = m.numel[u];
    widen = (size_t)(m.is_llama && m.llama.tied ? 2 : 1) * 8 * (size_t)big;
  }
  act += widen;
  if (m.is_gpt && !a.states_only) {
    const int T = a.seq ? a.seq : m.gpt.max_seq;
    if (T > m.gpt.max_seq) {
      fprintf(stderr, "zshard-plan: --seq %d exceeds the model's %d positions\n", T, m.gpt.max_seq);
      zp_model_free(&m);
      return 2;
    }
    act += zp_gpt_activation_bytes(&m.gpt, a.batch, T, cdt, a.recompute);
    /* train_gpt2 --freeze: the kernels' throw-away weight gradient of the largest frozen unit */
    act += (size_t)m.largest_frozen * (cdt == ZS_BF16 ? 2 : 4);
  }
  if (m.is_llama && !a.states_only) {
    /* the Llama example's buffers at --seq (default: 2048, or the model's positions if fewer) */
    const int T = a.seq ? a.seq : (m.llama.max_pos < 2048 ? m.llama.max_pos : 2048);
    size_t la;
    if (zp_llama_activations(&m, a.batch, T, cdt, a.recompute, a.sp ? a.tp : 1, &la)) {
      zp_model_free(&m);
      return 2;
    }
    act += la + (size_t)m.largest_frozen * (cdt == ZS_BF16 ? 2 : 4);
  }
  if (a.states_only) act = 0;
  /* Memory per rank: given, or this machine's (host memory split among the ranks, as if they
     all ran here). Unknown: unlimited. */
  size_t host = a.host_mem, dev = a.dev_mem;
  if (!host) host = zp_sys_host_bytes() / (size_t)a.world;
  if (!dev) dev = a.device == ZS_DEVICE_CUDA ? zp_sys_gpu_bytes() : host;
  if (!host) host = SIZE_MAX;
  if (!dev) dev = SIZE_MAX;
  if (a.recommend) {
    rc = zp_recommend(&a, &m, act, dev, host);
    zp_model_free(&m);
    return rc ? 2 : 0;
  }
  zs_config cfg;
  zp_config(&a, a.stage, a.offload, &cfg);
  zs_plan_report r;
  if (zp_plan(&a, &m, &cfg, act, dev, host, &r) != ZS_OK) {
    fprintf(stderr, "zshard-plan: %s\n", zs_last_error());
    zp_model_free(&m);
    return 2;
  }
  zp_print(&a, &m, &cfg, &r, dev, host);
  zp_model_free(&m);
  return 0;
}
