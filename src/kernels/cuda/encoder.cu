/* GPT-2 encoder (token + position embedding), the Llama token embedding (no positions:
 * zs_cuda_embedding_*) and its vocabulary-parallel form (zs_cuda_vocab_embedding_*: this rank's
 * rows [v0, v0 + Vl) only), forward and a deterministic backward.
 *
 * Backward without atomics: positions are processed in chunks of ENC_CHUNK; each chunk's
 * (token, position) keys are sorted in one block (bitonic, shared memory), then one block per
 * distinct token adds that token's dout rows into dwte in increasing position order. That is the
 * CPU's order (rows in (b, t) order), so fp32 results match it bit for bit, and the result never
 * depends on scheduling. dwpe sums over the batch per (t, c), also in order. */
#include <limits.h>

#include "kctx.cuh"
#include "llama_cuda.h"

#define ENC_THREADS 256
#define ENC_CHUNK 4096 /* positions sorted per block: 32 KiB of 64-bit keys in shared memory */
#define ENC_SORT_THREADS 1024

/* out[bt, c] = wte[tok[bt] - v0, c] + wpe[t, c] (wpe NULL: no positions, the Llama embedding);
   a token outside this table's rows [v0, v0 + Vl) reads 0 (the vocabulary-parallel part). */
template <typename T>
__global__ void encoder_fwd_kernel(T *out, const int *tok, const T *wte, const T *wpe, int BT,
                                   int T_, int C, int v0, unsigned Vl) {
  size_t n = (size_t)BT * C;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    size_t bt = i / C, c = i % C;
    size_t t = bt % T_;
    unsigned r = (unsigned)(tok[bt] - v0);
    float e = r < Vl ? zs_ld(&wte[(size_t)r * C + c]) : 0.0f;
    zs_st(&out[i], e + (wpe ? zs_ld(&wpe[t * C + c]) : 0.0f));
  }
}

/* Sorts the keys (row << 32 | position) of positions p0 .. p0+np-1 into keys_out[0..np), row =
   token - v0; a token outside [v0, v0 + Vl) gets the padding key ~0, which sorts last and adds
   nothing. */
__global__ void __launch_bounds__(ENC_SORT_THREADS)
    encoder_sort_kernel(unsigned long long *keys_out, const int *tok, int p0, int np, int v0,
                        unsigned Vl) {
  __shared__ unsigned long long s[ENC_CHUNK];
  for (int i = threadIdx.x; i < ENC_CHUNK; i += blockDim.x) {
    unsigned r = i < np ? (unsigned)(tok[p0 + i] - v0) : Vl;
    s[i] = r < Vl ? ((unsigned long long)r << 32) | (unsigned)(p0 + i) : ~0ull;
  }
  __syncthreads();
  for (int k = 2; k <= ENC_CHUNK; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < ENC_CHUNK; i += blockDim.x) {
        int l = i ^ j;
        if (l > i) {
          bool ascending = (i & k) == 0;
          unsigned long long a = s[i], b = s[l];
          if ((a > b) == ascending) {
            s[i] = b;
            s[l] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  for (int i = threadIdx.x; i < np; i += blockDim.x)
    keys_out[i] = s[i];
}

/* Block i: if sorted key i starts a run of one token, adds that run's dout rows into the token's
   dwte row, positions ascending (one fp32 sum per column, rounded once). */
template <typename T>
__global__ void encoder_dwte_kernel(T *dwte, const T *dout, const unsigned long long *keys, int np,
                                    int C) {
  int i = blockIdx.x;
  unsigned v = (unsigned)(keys[i] >> 32);
  if (keys[i] == ~0ull || (i > 0 && (unsigned)(keys[i - 1] >> 32) == v)) return;
  int end = i + 1;
  while (end < np && (unsigned)(keys[end] >> 32) == v)
    end++;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    T *dst = &dwte[(size_t)v * C + c];
    float acc = zs_ld(dst);
    for (int j = i; j < end; j++)
      acc += zs_ld(&dout[(size_t)(keys[j] & 0xffffffffu) * C + c]);
    zs_st(dst, acc);
  }
}

/* dwpe[t, c] += sum over b (in order) of dout[b, t, c]. */
template <typename T>
__global__ void encoder_dwpe_kernel(T *dwpe, const T *dout, int B, int T_, int C) {
  size_t n = (size_t)T_ * C;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    float acc = zs_ld(&dwpe[i]);
    for (int b = 0; b < B; b++)
      acc += zs_ld(&dout[(size_t)b * n + i]);
    zs_st(&dwpe[i], acc);
  }
}

/* The forward over this table's rows [v0, v0 + Vl) (the whole table: v0 0, Vl UINT_MAX). */
static zs_status enc_fwd(zs_cuda_kctx *k, void *out, const int *tok, const void *wte,
                         const void *wpe, int B, int T, int C, int v0, unsigned Vl,
                         const char *what) {
  size_t n = (size_t)B * T * C;
  ZS_DT_DISPATCH(k->dt, E,
                 encoder_fwd_kernel<E><<<zs_grid(n, ENC_THREADS), ENC_THREADS, 0, k->stream>>>(
                     (E *)out, tok, (const E *)wte, (const E *)wpe, B * T, T, C, v0, Vl));
  return zs_kcu_launched(what);
}

/* dwte by sorted token runs (tokens of rows [v0, v0 + Vl) only); dwpe (skipped when NULL: the
   Llama embedding) summed over b. */
static zs_status enc_bwd(zs_cuda_kctx *k, void *dwte, void *dwpe, const void *dout, const int *tok,
                         int B, int T, int C, int v0, unsigned Vl, const char *what) {
  int BT = B * T;
  unsigned long long *keys = (unsigned long long *)k->scratch; /* ENC_CHUNK keys */
  unsigned ct = C < ENC_THREADS ? (unsigned)((C + 31) / 32 * 32) : ENC_THREADS;
  for (int p0 = 0; p0 < BT; p0 += ENC_CHUNK) {
    int np = BT - p0 < ENC_CHUNK ? BT - p0 : ENC_CHUNK;
    encoder_sort_kernel<<<1, ENC_SORT_THREADS, 0, k->stream>>>(keys, tok, p0, np, v0, Vl);
    ZS_CHECK(zs_kcu_launched(what));
    ZS_DT_DISPATCH(k->dt, E,
                   encoder_dwte_kernel<E>
                   <<<np, ct, 0, k->stream>>>((E *)dwte, (const E *)dout, keys, np, C));
    ZS_CHECK(zs_kcu_launched(what));
  }
  if (!dwpe) return ZS_OK;
  size_t n = (size_t)T * C;
  ZS_DT_DISPATCH(k->dt, E,
                 encoder_dwpe_kernel<E><<<zs_grid(n, ENC_THREADS), ENC_THREADS, 0, k->stream>>>(
                     (E *)dwpe, (const E *)dout, B, T, C));
  return zs_kcu_launched(what);
}

extern "C" zs_status zs_cuda_encoder_fwd(zs_cuda_kctx *k, void *out, const int *tok,
                                         const void *wte, const void *wpe, int B, int T, int C) {
  return enc_fwd(k, out, tok, wte, wpe, B, T, C, 0, UINT_MAX, "zs_cuda_encoder_fwd");
}

extern "C" zs_status zs_cuda_encoder_bwd(zs_cuda_kctx *k, void *dwte, void *dwpe, const void *dout,
                                         const int *tok, int B, int T, int C) {
  return enc_bwd(k, dwte, dwpe, dout, tok, B, T, C, 0, UINT_MAX, "zs_cuda_encoder_bwd");
}

/* The Llama token embedding: the encoder without positions, all N tokens as one sequence (the
   position of a row never matters without wpe). V only bounds the ids, which are trusted here. */
extern "C" zs_status zs_cuda_embedding_fwd(zs_cuda_kctx *k, void *out, const int *tok,
                                           const void *wte, int N, int C, int V) {
  (void)V;
  return enc_fwd(k, out, tok, wte, NULL, 1, N, C, 0, UINT_MAX, "zs_cuda_embedding_fwd");
}

extern "C" zs_status zs_cuda_embedding_bwd(zs_cuda_kctx *k, void *dwte, const void *dout,
                                           const int *tok, int N, int C, int V) {
  (void)V;
  return enc_bwd(k, dwte, NULL, dout, tok, 1, N, C, 0, UINT_MAX, "zs_cuda_embedding_bwd");
}

extern "C" zs_status zs_cuda_vocab_embedding_fwd(zs_cuda_kctx *k, void *out, const int *tok,
                                                 const void *wte, int N, int C, int v0, int Vl,
                                                 int V) {
  (void)V;
  return enc_fwd(k, out, tok, wte, NULL, 1, N, C, v0, (unsigned)Vl, "zs_cuda_vocab_embedding_fwd");
}

extern "C" zs_status zs_cuda_vocab_embedding_bwd(zs_cuda_kctx *k, void *dwte, const void *dout,
                                                 const int *tok, int N, int C, int v0, int Vl,
                                                 int V) {
  (void)V;
  return enc_bwd(k, dwte, NULL, dout, tok, 1, N, C, v0, (unsigned)Vl,
                 "zs_cuda_vocab_embedding_bwd");
}
