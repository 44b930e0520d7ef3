/* Chooses an AdamW path (scalar / AVX2 / AVX-512) at run time. Every path gives the same bits:
 * the update is elementwise and each path performs adamw.h's operations in the same order (the
 * split into tiles for worker threads is src/optim/adamw/adamw_mt.c's). */
#include "optim/adamw/cpu/adamw.h"

#include "base/config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const char *zs_adamw_isa_name(zs_adamw_isa isa) {
  switch (isa) {
  case ZS_ADAMW_ISA_AUTO:
    return "auto";
  case ZS_ADAMW_ISA_SCALAR:
    return "scalar";
  case ZS_ADAMW_ISA_AVX2:
    return "avx2";
  case ZS_ADAMW_ISA_AVX512:
    return "avx512";
  }
  return "unknown";
}

int zs_adamw_isa_supported(zs_adamw_isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  /* BW and DQ too (every AVX-512 CPU but Xeon Phi has them): the lean and remainder kernels'
     byte shuffles and fpclass tests */
  if (isa == ZS_ADAMW_ISA_AVX512)
    return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0 &&
           __builtin_cpu_supports("avx512dq") != 0;
  if (isa == ZS_ADAMW_ISA_AVX2)
    return __builtin_cpu_supports("avx2") != 0 && __builtin_cpu_supports("fma") != 0;
#endif
  return isa == ZS_ADAMW_ISA_SCALAR;
}

/* The widest supported path not wider than `want`. */
static zs_adamw_isa zs_adamw_isa_clamp(zs_adamw_isa want) {
  for (int i = (int)want; i > ZS_ADAMW_ISA_SCALAR; i--)
    if (zs_adamw_isa_supported((zs_adamw_isa)i)) return (zs_adamw_isa)i;
  return ZS_ADAMW_ISA_SCALAR;
}

static zs_adamw_isa zs_active_isa = ZS_ADAMW_ISA_SCALAR;
static pthread_once_t zs_isa_once = PTHREAD_ONCE_INIT;

/* Reads ZS_ADAMW_ISA once; unknown values are ignored (the widest path is used). */
static void zs_isa_init(void) {
  zs_adamw_isa want = ZS_ADAMW_ISA_AVX512;
  const char *s = zs_env("ZS_ADAMW_ISA");
  if (s && strcmp(s, "scalar") == 0) want = ZS_ADAMW_ISA_SCALAR;
  if (s && strcmp(s, "avx2") == 0) want = ZS_ADAMW_ISA_AVX2;
  zs_active_isa = zs_adamw_isa_clamp(want);
}

zs_adamw_isa zs_adamw_isa_active(void) {
  pthread_once(&zs_isa_once, zs_isa_init);
  return zs_active_isa;
}

zs_adamw_isa zs_adamw_isa_resolve(zs_adamw_isa isa) {
  return isa == ZS_ADAMW_ISA_AUTO ? zs_adamw_isa_active() : zs_adamw_isa_clamp(isa);
}

zs_adamw_kernel zs_adamw_kernel_for(zs_adamw_isa isa) {
  switch (isa) {
  case ZS_ADAMW_ISA_AVX512:
    return zs_cpu_adamw_avx512;
  case ZS_ADAMW_ISA_AVX2:
    return zs_cpu_adamw_avx2;
  default:
    return zs_cpu_adamw_scalar;
  }
}

void zs_cpu_adamw(const zs_adamw_coef *c, float *master, float *m, float *v, const void *grad,
                  zs_dtype grad_dt, void *param_out, zs_dtype param_dt, size_t n) {
  zs_adamw_kernel_for(zs_adamw_isa_active())(c, master, m, v, grad, grad_dt, param_out, param_dt,
                                             n);
}

zs_adamw_kernel_m16 zs_adamw_kernel_m16_for(zs_adamw_isa isa) {
  switch (isa) {
  case ZS_ADAMW_ISA_AVX512:
    return zs_cpu_adamw_m16_avx512;
  case ZS_ADAMW_ISA_AVX2:
    return zs_cpu_adamw_m16_avx2;
  default:
    return zs_cpu_adamw_m16_scalar;
  }
}

void zs_cpu_adamw_m16(const zs_adamw_coef *c, float *master, uint16_t *m, uint16_t *v,
                      const void *grad, zs_dtype grad_dt, void *param_out, zs_dtype param_dt,
                      size_t n) {
  zs_adamw_kernel_m16_for(zs_adamw_isa_active())(c, master, m, v, grad, grad_dt, param_out,
                                                 param_dt, n);
}
