/* Test dumps (raw little-endian fp32 / int32 files) for the PyTorch reference and the
 * determinism test. File names, all under one directory:
 *   meta.json                         shapes of the run (rank 0)
 *   w.<unit>.<tensor>.f32             weights, full fp32 master (rank 0)
 *   r<rank>.tok.i32 / r<rank>.tgt.i32 the first micro-batch of step 0 on that rank
 *   r<rank>.logits.f32 [B*T, Vp], r<rank>.losses.f32 [B*T]
 *   r<rank>.grad.<unit>.<tensor>.f32  that micro-batch's gradient, read from zs_unit_grad just
 *                                     before zs_unit_grads_ready (correct at every stage: the
 *                                     engine zeroes grads at begin_step and nothing is reduced
 *                                     into the user's buffer before grads_ready)
 *   r<rank>.grad_head.wte.f32         the LM head's share of the wte gradient alone */
#ifndef GPT2_DUMP_H
#define GPT2_DUMP_H

#include "model.h"

typedef struct {
  const char *dir;
  int rank;
  int active; /* the hook writes only while set (step 0, micro-step 0) */
} gpt2_dump;

/* The gpt2_grad_hook that writes gradients and logits (ctx: gpt2_dump *). */
int gpt2_dump_hook(void *ctx, gpt2_model *m, int u, const char *phase);
/* Writes this rank's micro-batch tokens, targets and per-token losses (host arrays). */
int gpt2_dump_batch(const gpt2_dump *d, const gpt2_model *m, const int *tok, const int *tgt);
/* Writes meta.json (rank 0). */
int gpt2_dump_meta(const gpt2_dump *d, const gpt2_model *m, int world, int micro_steps);
/* Every rank calls (zs_unit_get_param is collective); rank 0 writes w.* files into dir. */
int gpt2_dump_weights(const gpt2_units *u, const char *dir, int rank);

#endif
