/* Portable AdamW over host arrays (the reference path; see adamw.h for the operation order). */
#include "optim/adamw/cpu/adamw.h"

#include <stdint.h>

#include "base/bf16.h"

/* Coefficients in double, each rounded to float exactly once (see adamw.h). */
void zs_adamw_coef_make(zs_adamw_coef *c, float lr, float beta1, float beta2, float eps, float wd,
                        long long t, double gscale) {
  c->gscale = (float)gscale;
  c->beta1 = beta1;
  c->omb1 = 1.0f - beta1;
  c->beta2 = beta2;
  c->omb2 = 1.0f - beta2;
  c->bc1 = (float)(1.0 / (1.0 - pow((double)beta1, (double)t)));
  c->bc2 = (float)(1.0 / (1.0 - pow((double)beta2, (double)t)));
  c->eps = eps;
  c->wd = wd;
  c->neg_lr = -lr;
}

/* The reference loop: one element at a time in adamw.h's order. zs_cpu_adamw (adamw_dispatch.c)
   calls this or a vector path with the same bits. */
void zs_cpu_adamw_scalar(const zs_adamw_coef *c, float *master, float *m, float *v,
                         const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                         size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g =
        grad_dt == ZS_BF16 ? zs_bf16_to_f32(((const uint16_t *)grad)[i]) : ((const float *)grad)[i];
    zs_adamw_elem(c, &master[i], &m[i], &v[i], g);
    if (param_out) {
      if (param_dt == ZS_BF16)
        ((uint16_t *)param_out)[i] = zs_f32_to_bf16(master[i]);
      else
        ((float *)param_out)[i] = master[i];
    }
  }
}

/* The bf16-moment reference loop (zs_adamw_elem_m16). */
void zs_cpu_adamw_m16_scalar(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                             const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                             size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g =
        grad_dt == ZS_BF16 ? zs_bf16_to_f32(((const uint16_t *)grad)[i]) : ((const float *)grad)[i];
    zs_adamw_elem_m16(c, &master[i], &m[i], &v[i], g);
    if (param_out) {
      if (param_dt == ZS_BF16)
        ((uint16_t *)param_out)[i] = zs_f32_to_bf16(master[i]);
      else
        ((float *)param_out)[i] = master[i];
    }
  }
}
