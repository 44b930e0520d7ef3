/* The CUDA codec's arguments (codec_cuda.cuh): one device update of n elements in a precision
 * mode, every pointer device memory, as the C side (zs_codec_dev_of) unpacks them for the
 * modules' CUDA twins, which are C++ and see no driver header. */
#ifndef ZS_OPTIM_CODEC_DEV_H
#define ZS_OPTIM_CODEC_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "base/opt_shape.h" /* ZS_OPT_MAX_STATE */
#include "optim/lean.h"     /* zs_lean_key */
#include "zshard.h"

typedef struct {
  int master;                    /* zs_config.master */
  int state_bf16;                /* the state arrays are bf16 (else fp32) */
  float *fp32;                   /* the fp32 master, in the modes with one */
  void *state[ZS_OPT_MAX_STATE]; /* the module's arrays (unused: NULL) */
  uint16_t *rem;                 /* ZS_MASTER_REMAINDER: the remainders */
  zs_lean_key key;               /* ZS_MASTER_LEAN: the rounding's key */
  const void *grad;
  zs_dtype gdt;
  void *out; /* the bf16 params in place (remainder, lean), or the compute copy, or NULL */
  zs_dtype pdt;
  size_t n;
  void *stream;
} zs_codec_dev;

#endif
