/* The Llama-family model on the engine: its units (common/llama_layout.h) and the activation
 * buffers of one micro-batch, sized by the same formula zshard-plan uses (activations.h:
 * llama_model_init checks that what it allocates is that formula's bytes). The forward and backward
 * are in examples/train_llama.c.
 *
 * Memory: the residual stream keeps each layer's input (L+1 tensors of B*T*C, or B*T/sp with
 * sequence parallelism). Without recompute
 * every layer keeps its own saved set; with recompute one set is shared and each layer's forward
 * is run again during its backward. */
#ifndef LLAMA_MODEL_H
#define LLAMA_MODEL_H

#include "../common/device.h"
#include "../common/llama_config.h"
#include "../common/llama_layout.h"
#include "../common/widen.h"

/* The saved activations of one decoder layer (dt unless noted). */
typedef struct {
  void *xn, *q, *k, *v, *att, *res2, *hn, *gate, *up, *act;
  float *rrms1, *rrms2, *lse; /* fp32: two RMSNorm statistics, attention log-sum-exp [B,NH,T] */
} llama_layer_acts;

typedef struct {
  llama_config cfg;
  int B, T; /* micro-batch shape the buffers are sized for */
  /* Sequence parallelism (--sp): sp = tp, and this tp rank (q) keeps rows [q N/sp, (q+1) N/sp)
     of a micro-batch's N tokens between the tensor-parallel regions (the residual stream, its
     gradient, the norms' statistics, the logits); 1: every rank keeps every row. */
  int sp, q;
  int recompute; /* --recompute */
  gpt2_dev dev;
  /* The engine, whose tp group the kernels' tensor-parallel layers (zs_k_tp_*) span; with
     tensor parallelism cfg is one tp rank's (llama_tp_local). */
  zs_engine *e;
  /* With fewer kv heads than tp ranks (cfg.kv_whole): the first row of this rank's kv head in the
     whole k/v it holds (its gradient's rows too); 0 otherwise. */
  size_t kv_off;
  /* With a vocabulary-parallel embedding and head (cfg.vocab_part): this rank's first vocabulary
     row, q * vocab_part. */
  int v0;
  zs_kernels *k;
  zs_unit **units; /* [L+2]: embedding, layer.0 .. layer.L-1, head (not owned) */
  /* Tensor index of each LLAY_* slot in a layer unit (-1: absent, the biases without qkv_bias). */
  int slot[LLAY_NT];
  void **res;             /* [L+1] residual stream, B*T*C each */
  llama_layer_acts *acts; /* [L], or [1] with recompute */
  void *fn;               /* final norm output (every token's with a vocabulary-parallel head) */
  float *rrmsf;
  void *logits;     /* B*T*V (B*T*vocab_part); the head's backward reuses it for dlogits */
  float *xpart;     /* vocabulary-parallel loss: 3 B*T floats per tp rank, then this rank's */
  void *row;        /* vocabulary-parallel sampling: one whole row of logits (V) */
  float *losses;    /* B*T per-token losses (device) */
  int *tok, *tgt;   /* B*T token ids (device) */
  void *dres, *dln; /* backward: the residual gradient and a C-wide scratch (also the forward's
                       projection outputs before their residual add) */
  void *wA, *wB;    /* backward work, N * max(Q + 2KV, 2I) each */
  void *spbuf;      /* with sp > 1: N * C, a region's gathered input or scattered output */
  float *cos, *sin; /* RoPE tables [T, hd/2] (device) */
  float *host_losses;
  /* --dtype bf16 on the CPU device: fp32 copies of the gathered units (common/widen.h); set up by
     the program after llama_model_init, freed by llama_model_free. */
  gpt2_widen widen;
  void *frozen_grads; /* frozen units' gradients go here (the largest frozen unit); NULL: none */
  size_t act_bytes;   /* device bytes of everything above */
} llama_model;

/* Allocates the activations for micro-batches of B x T on dev's device and fills the RoPE tables
   (units registered and committed; units[] has L+2 entries). 0, or -1 (gpt2_error()). */
int llama_model_init(llama_model *m, const llama_config *c, zs_unit **units, const gpt2_dev *dev,
                     zs_kernels *k, int B, int T, int recompute, int sp, int q);
void llama_model_free(llama_model *m);

#endif
