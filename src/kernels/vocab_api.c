/* Public vocabulary-parallel kernels (zs_k_vocab_*): argument validation, then dispatch to the CPU
 * reference (src/kernels/cpu/llama_vocab.c, fp32) or the CUDA twins
 * (src/kernels/cuda/encoder.cu, vocab_xent.cu). As in llama_api.c, every argument problem is
 * reported here, once, for both devices, and ids are range-checked only on the CPU. */
#include <stddef.h>

#include "kernels/cpu/llama_cpu.h"
#include "kernels/kernels_ctx.h"
#include "kernels/kerr.h"
#include "zshard_kernels.h"
#ifdef ZS_HAVE_CUDA
#include "kernels/cuda/llama_cuda.h"
#endif

/* This rank's rows [v0, v0 + Vl) inside the V-row vocabulary. */
static zs_status vocab_range(const char *fn, int v0, int Vl, int V) {
  REQ(Vl > 0 && V > 0, "%s: Vl = %d and V = %d must be > 0", fn, Vl, V);
  REQ(v0 >= 0 && (long long)v0 + Vl <= V,
      "%s: rows [v0 = %d, v0 + Vl = %lld) are not inside the vocabulary [0, V = %d): pass this "
      "rank's first row and row count",
      fn, v0, (long long)v0 + Vl, V);
  return ZS_OK;
}

static zs_status ids_in_range(const char *fn, const char *what, const int *id, int N, int V) {
  return zs_k_ids_in_range(fn, what, id, N, V, "ids of the whole vocabulary");
}

zs_status zs_k_vocab_embedding_fwd(zs_kernels *k, void *out, const int *tok, const void *wte, int N,
                                   int C, int v0, int Vl, int V) {
  static const char fn[] = "zs_k_vocab_embedding_fwd";
  REQ_CTX(k);
  REQ_PTR(out);
  REQ_PTR(tok);
  REQ_PTR(wte);
  REQ_DISTINCT(out, wte);
  REQ_DIM(N);
  REQ_DIM(C);
  ZS_CHECK(vocab_range(fn, v0, Vl, V));
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(vocab_embedding_fwd, out, tok, wte, N, C, v0, Vl, V);
  ZS_CHECK(ids_in_range(fn, "tok", tok, N, V));
  zs_cpu_vocab_embedding_fwd(out, tok, wte, N, C, v0, Vl);
  return ZS_OK;
}

zs_status zs_k_vocab_embedding_bwd(zs_kernels *k, void *dwte, const void *dout, const int *tok,
                                   int N, int C, int v0, int Vl, int V) {
  static const char fn[] = "zs_k_vocab_embedding_bwd";
  REQ_CTX(k);
  REQ_PTR(dwte);
  REQ_PTR(dout);
  REQ_PTR(tok);
  REQ_DISTINCT(dwte, dout);
  REQ_DIM(N);
  REQ_DIM(C);
  ZS_CHECK(vocab_range(fn, v0, Vl, V));
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(vocab_embedding_bwd, dwte, dout, tok, N, C, v0, Vl, V);
  ZS_CHECK(ids_in_range(fn, "tok", tok, N, V));
  zs_cpu_vocab_embedding_bwd(dwte, dout, tok, N, C, v0, Vl);
  return ZS_OK;
}

zs_status zs_k_vocab_xent_part(zs_kernels *k, float *part, const void *logits, const int *targets,
                               int N, int v0, int Vl, int V) {
  static const char fn[] = "zs_k_vocab_xent_part";
  REQ_CTX(k);
  REQ_PTR(part);
  REQ_PTR(logits);
  REQ_PTR(targets);
  REQ_DISTINCT(part, logits);
  REQ_DIM(N);
  ZS_CHECK(vocab_range(fn, v0, Vl, V));
  if (k->dev == ZS_DEVICE_CUDA) CUDA_CALL(vocab_xent_part, part, logits, targets, N, v0, Vl, V);
  ZS_CHECK(ids_in_range(fn, "targets", targets, N, V));
  zs_cpu_vocab_xent_part(part, logits, targets, N, v0, Vl);
  return ZS_OK;
}

/* dlogits may be NULL (losses only) and may alias logits. */
zs_status zs_k_vocab_xent_finish(zs_kernels *k, float *losses, void *dlogits, const void *logits,
                                 const float *parts, int P, const int *targets, float dloss, int N,
                                 int v0, int Vl, int V) {
  static const char fn[] = "zs_k_vocab_xent_finish";
  REQ_CTX(k);
  REQ_PTR(losses);
  REQ_PTR(logits);
  REQ_PTR(parts);
  REQ_PTR(targets);
  REQ_DISTINCT(losses, parts);
  REQ_DISTINCT(dlogits, parts);
  REQ_DIM(N);
  REQ_DIM(P);
  ZS_CHECK(vocab_range(fn, v0, Vl, V));
  REQ((long long)P * Vl == V,
      "%s: P = %d ranks of Vl = %d rows are not the vocabulary V = %d: the ranks split it evenly",
      fn, P, Vl, V);
  if (k->dev == ZS_DEVICE_CUDA)
    CUDA_CALL(vocab_xent_finish, losses, dlogits, logits, parts, P, targets, dloss, N, v0, Vl, V);
  ZS_CHECK(ids_in_range(fn, "targets", targets, N, V));
  zs_cpu_vocab_xent_finish(losses, dlogits, logits, parts, P, targets, dloss, N, v0, Vl);
  return ZS_OK;
}
