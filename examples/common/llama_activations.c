/* The Llama example's activation bytes (the formula is in activations.h). */
#include "llama_activations.h"

#include <stdint.h>

size_t llama_activation_bytes(const llama_config *c, int B, int T, zs_dtype dt, int recompute,
                              int sp) {
  const size_t N = (size_t)B * (size_t)T, e = dt == ZS_BF16 ? 2 : 4, f = 4;
  const size_t Nl = sp > 1 ? N / (size_t)sp : N; /* this rank's rows between the tp regions */
  const size_t C = (size_t)c->hidden, L = (size_t)c->layers, I = (size_t)c->intermediate;
  const size_t Q = (size_t)c->heads * (size_t)c->head_dim;
  const size_t KV = (size_t)c->kv_heads * (size_t)c->head_dim, V = (size_t)c->vocab;
  const size_t Vp = (size_t)c->vocab_part, P = Vp ? V / Vp : 0; /* vocabulary-parallel head */
  const size_t layer =
      N * (2 * C + 2 * Q + 2 * KV + 3 * I) * e + Nl * C * e + 2 * Nl * f + N * (size_t)c->heads * f;
  const size_t work = Q + 2 * KV > 2 * I ? Q + 2 * KV : 2 * I;
  size_t t = (recompute ? 1 : L) * layer;
  t += (L + 1) * Nl * C * e;                      /* residual stream */
  t += (Vp ? N : Nl) * C * e + Nl * f;            /* final norm output, rstd */
  t += Vp ? N * Vp * e : Nl * V * e;              /* logits */
  t += Vp ? 3 * N * (P + 1) * f + V * e : 0;      /* the loss's parts, a sampled row */
  t += N * f + 2 * N * sizeof(int32_t);           /* losses, token and target ids */
  t += Nl * C * e + N * C * e + 2 * N * work * e; /* backward scratch */
  t += sp > 1 ? N * C * e : 0;                    /* sequence parallelism's staging */
  t += (size_t)T * (size_t)c->head_dim * f;       /* RoPE cos, sin: T x hd/2 each */
  return t;
}
