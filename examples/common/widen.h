/* bf16 params on a device whose kernels are fp32 only (the CPU device): the engine holds bf16
 * params and gradients (zs_config.param_dtype = ZS_BF16, what lean mode needs), the example
 * computes in fp32. After a unit is gathered, gpt2_widen_params copies its bf16 params into an
 * fp32 scratch the kernels read; gpt2_widen_grads hands out a zeroed fp32 scratch the kernels
 * += into; gpt2_widen_fold adds it, rounded to nearest even, into the engine's bf16 gradient
 * (call it before zs_unit_grads_flush and zs_unit_grads_ready). One unit per slot, so the
 * scratch is bounded by the largest unit: slots x (params + grads) x 4 bytes x its elements.
 * Used by train_gpt2 and train_llama (one slot; two when a tied head holds the embedding
 * beside the head unit). */
#ifndef COMMON_WIDEN_H
#define COMMON_WIDEN_H

#include <stddef.h>

#include "zshard.h"

#define GPT2_WIDEN_SLOTS 2

typedef struct {
  int on;                           /* 0: params are fp32, everything below is unused */
  int slots;                        /* slots allocated (1 or 2) */
  size_t cap;                       /* elements per scratch: the largest unit's */
  float *p[GPT2_WIDEN_SLOTS];       /* fp32 copies of a gathered unit's params */
  float *g[GPT2_WIDEN_SLOTS];       /* fp32 gradients of a unit, folded by gpt2_widen_fold */
  zs_unit *gunit[GPT2_WIDEN_SLOTS]; /* the unit whose gradients slot s holds; NULL: none */
} gpt2_widen;

/* on != 0: allocates `slots` scratch pairs for the largest of the engine's units (after
   zs_engine_commit); on == 0 sets nothing up. 0, or -1 (gpt2_error()). */
int gpt2_widen_init(gpt2_widen *w, int on, int slots, zs_engine *e);
/* Bytes of scratch held (0 when off): the memory table counts them with the activations. */
size_t gpt2_widen_bytes(const gpt2_widen *w);
void gpt2_widen_free(gpt2_widen *w);
/* p[t] = fp32 copies of gathered unit u's tensors in slot s. 0, or -1. */
int gpt2_widen_params(gpt2_widen *w, int s, zs_unit *u, void **p);
/* g[t] = zeroed fp32 gradient scratch for unit u (not frozen) in slot s; folds what the slot
   held for another unit first. 0, or -1. */
int gpt2_widen_grads(gpt2_widen *w, int s, zs_unit *u, void **g);
/* Adds slot s's fp32 gradients, rounded to bf16 (nearest even), into its unit's zs_unit_grad
   (bf16 += in fp32 then rounded) and empties the slot; nothing when it holds none. 0, or -1. */
int gpt2_widen_fold(gpt2_widen *w, int s);

#endif
