/* The GPT-2 model on the engine: activation buffers, and forward/backward composed from the
 * zs_k_* kernels with the engine's gather / release / grads_ready protocol around every unit.
 *
 * Memory: the residual stream keeps each block's input (L+1 tensors of B*T*C). Without recompute
 * every block also keeps its own activations; with recompute one set is shared and each block's
 * forward is run again during its backward, so activation memory is about one block. */
#ifndef GPT2_MODEL_H
#define GPT2_MODEL_H

#include "../common/device.h"
#include "../common/widen.h"
#include "config.h"
#include "layout.h"

/* The saved activations of one block (dt unless noted). */
typedef struct {
  void *ln1, *qkv, *atty, *res2, *ln2, *fch, *fch_gelu;
  float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd, *lse; /* fp32 statistics */
} gpt2_block_acts;

typedef struct gpt2_model gpt2_model;
/* Test hook. Called right before zs_unit_grads_ready of unit u (phase "final"); for the
   embedding also after the LM head's backward (phase "head": the head's share of the wte
   gradient only), and when training, with the logits in m->logits before the loss overwrites
   them (phase "logits"). Returns 0 or -1 to abort the step. */
typedef int (*gpt2_grad_hook)(void *ctx, gpt2_model *m, int u, const char *phase);

struct gpt2_model {
  gpt2_config cfg;
  int B, T;      /* micro-batch shape the buffers are sized for */
  int recompute; /* --recompute */
  gpt2_dev dev;
  zs_kernels *k;
  gpt2_units units;
  void **res;            /* [L+1] residual stream, B*T*C each */
  gpt2_block_acts *acts; /* [L], or [1] with recompute */
  void *lnf;
  float *lnf_mean, *lnf_rstd;
  void *logits;               /* B*T*Vp; the head's backward reuses it for dlogits */
  float *losses;              /* B*T per-token losses (device) */
  int *tok, *tgt;             /* B*T token ids (device) */
  void *dres, *dln, *dA, *dB; /* backward scratch: C, C, 4C, 4C per token */
  /* Frozen units (--freeze) have no gradient, but the kernels always write a weight gradient:
     they write it here and it is thrown away. The largest frozen unit's size; NULL if none. */
  void *frozen_grads;
  float *host_losses;
  /* --dtype bf16 on the CPU device: fp32 copies of the gathered unit (widen.h); set up by the
     program after gpt2_model_init, freed by gpt2_model_free. */
  gpt2_widen widen;
  size_t act_bytes; /* device bytes of everything above (the widen scratch included) */
#ifdef GPT2_TEST_HOOKS
  gpt2_grad_hook hook; /* the test build's gradient dumps (train_gpt2_dump) */
  void *hook_ctx;
#endif
};

/* Allocates the activations for micro-batches of B x T on the device of `dev` (units already
   registered and committed). */
int gpt2_model_init(gpt2_model *m, const gpt2_units *units, const gpt2_dev *dev, zs_kernels *k,
                    int B, int T, int recompute);
void gpt2_model_free(gpt2_model *m);

/* One micro-step of training: forward, loss, backward with every unit's grads_ready, on
   tokens/targets (host, B*T each). *loss = mean loss of this micro-batch. */
int gpt2_train_micro(gpt2_model *m, const int *tok, const int *tgt, float *loss);
/* Forward and loss only (no gradients) on b <= B sequences. */
int gpt2_eval(gpt2_model *m, const int *tok, const int *tgt, int b, float *loss);
/* Forward of one sequence of T tokens; leaves the logits of every position in m->logits. */
int gpt2_forward_logits(gpt2_model *m, const int *tok);

#endif
