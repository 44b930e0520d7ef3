/* Matmul forward/backward through cuBLASLt: fp32 compute (CUBLAS_COMPUTE_32F, never TF32) on
 * fp32 or bf16 storage; forward bias via the BIAS epilogue; dbias via the deterministic column
 * reduction. Row-major [rows, cols] tensors are column-major [cols, rows] to cuBLAS, so
 *   out[N,OC]  = inp[N,C] w[OC,C]^T  is  D(OC x N) = op_T(w: C x OC) * (inp: C x N)
 *   dinp[N,C] += dout w              is  D(C x N) += (w: C x OC) * (dout: OC x N)
 *   dw[OC,C]  += dout^T inp          is  D(C x OC) += (inp: C x N) * op_T(dout: OC x N)
 * The heuristic's answer is cached per problem (shape, transposes, epilogue, pointer alignment).
 * Where cuBLASLt has no algorithm (odd shapes, alignments), a plain tiled GEMM takes over. */
#include <string.h>

#include "colreduce.cuh"
#include "gemm_simt.cuh"

/* Largest power of two (<= 256) dividing the address: cuBLASLt algorithms assume alignments. */
static uint32_t ptr_align(const void *p) {
  uintptr_t u = (uintptr_t)p;
  uint32_t a = 256;
  while (a > 1 && (u % a))
    a >>= 1;
  return a;
}

/* A cuBLASLt failure as ZS_ERR_DEVICE naming the call. */
static zs_status lt_check(cublasStatus_t s, const char *fn, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return ZS_OK;
  return zs_kerr(ZS_ERR_DEVICE, "%s: %s failed: %s (%s)", fn, what, cublasLtGetStatusName(s),
                 cublasLtGetStatusString(s));
}

/* One GEMM problem, column-major, as cuBLASLt sees it. */
typedef struct {
  cublasOperation_t ta, tb;
  int m, n, k;
  const void *A, *B;
  void *D;
  int64_t lda, ldb, ldd;
  int accumulate;   /* D += A B instead of D = A B */
  const void *bias; /* [m], BIAS epilogue, or NULL */
} lt_problem;

/* Cached or freshly asked heuristic algorithm for problem p. */
static zs_status lt_algo(zs_cuda_kctx *k, const char *fn, const lt_problem *p,
                         cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                         cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t ld,
                         cublasLtMatmulAlgo_t *algo) {
  zs_lt_entry key;
  memset(&key, 0, sizeof key);
  key.used = 1;
  key.m = p->m, key.n = p->n, key.k = p->k, key.ta = (int)p->ta, key.tb = (int)p->tb;
  key.epilogue = p->bias != NULL, key.accumulate = p->accumulate;
  key.align[0] = (int)ptr_align(p->A), key.align[1] = (int)ptr_align(p->B);
  key.align[2] = key.align[3] = (int)ptr_align(p->D);
  for (int i = 0; i < ZS_LT_CACHE_SIZE; i++) {
    zs_lt_entry *e = &k->cache[i];
    if (e->used && e->m == key.m && e->n == key.n && e->k == key.k && e->ta == key.ta &&
        e->tb == key.tb && e->epilogue == key.epilogue && e->accumulate == key.accumulate &&
        !memcmp(e->align, key.align, sizeof key.align)) {
      *algo = e->algo;
      return ZS_OK;
    }
  }
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t res;
  int nres = 0;
  cublasStatus_t bs;
  uint64_t ws = ZS_LT_WORKSPACE_BYTES;
  uint32_t al[4] = {(uint32_t)key.align[0], (uint32_t)key.align[1], (uint32_t)key.align[2],
                    (uint32_t)key.align[3]};
  zs_status rc =
      lt_check(cublasLtMatmulPreferenceCreate(&pref), fn, "cublasLtMatmulPreferenceCreate");
  if (rc != ZS_OK) return rc;
  cublasLtMatmulPreferenceAttributes_t attrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  ZS_CHECK_GOTO(lt_check(cublasLtMatmulPreferenceSetAttribute(
                             pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                         fn, "cublasLtMatmulPreferenceSetAttribute(workspace)"),
                rc, done);
  for (int i = 0; i < 4; i++)
    ZS_CHECK_GOTO(
        lt_check(cublasLtMatmulPreferenceSetAttribute(pref, attrs[i], &al[i], sizeof al[i]), fn,
                 "cublasLtMatmulPreferenceSetAttribute(alignment)"),
        rc, done);
  bs = cublasLtMatmulAlgoGetHeuristic(k->lt, desc, la, lb, ld, ld, pref, 1, &res, &nres);
  if (bs != CUBLAS_STATUS_NOT_SUPPORTED)
    ZS_CHECK_GOTO(lt_check(bs, fn, "cublasLtMatmulAlgoGetHeuristic"), rc, done);
  if (bs == CUBLAS_STATUS_NOT_SUPPORTED || nres < 1) {
    rc = zs_kerr(ZS_ERR_UNSUPPORTED, "%s: cuBLASLt has no algorithm for m=%d n=%d k=%d", fn, p->m,
                 p->n, p->k);
    goto done;
  }
  key.algo = res.algo;
  k->cache[k->cache_next] = key;
  k->cache_next = (k->cache_next + 1) % ZS_LT_CACHE_SIZE;
  *algo = res.algo;
done:
  cublasLtMatmulPreferenceDestroy(pref);
  return rc;
}

/* Runs problem p on the context's stream (fp32 compute, storage in the context's dtype). */
static zs_status lt_gemm(zs_cuda_kctx *k, const char *fn, const lt_problem *p) {
  cudaDataType_t ty = k->dt == ZS_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  cublasLtMatmulDesc_t desc = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
  cublasLtMatmulAlgo_t algo;
  float alpha = 1.0f, beta = p->accumulate ? 1.0f : 0.0f;
  cublasStatus_t bs;
  int32_t ta = (int32_t)p->ta, tb = (int32_t)p->tb;
  uint64_t am = p->ta == CUBLAS_OP_N ? p->m : p->k, an = p->ta == CUBLAS_OP_N ? p->k : p->m;
  uint64_t bm = p->tb == CUBLAS_OP_N ? p->k : p->n, bn = p->tb == CUBLAS_OP_N ? p->n : p->k;
  zs_status rc = lt_check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), fn,
                          "cublasLtMatmulDescCreate");
  if (rc != ZS_OK) return rc;
  ZS_CHECK_GOTO(
      lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
               fn, "cublasLtMatmulDescSetAttribute(TRANSA)"),
      rc, done);
  ZS_CHECK_GOTO(
      lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
               fn, "cublasLtMatmulDescSetAttribute(TRANSB)"),
      rc, done);
  if (p->bias) {
    uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
    int32_t bty = (int32_t)ty;
    ZS_CHECK_GOTO(lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                          sizeof epi),
                           fn, "cublasLtMatmulDescSetAttribute(EPILOGUE)"),
                  rc, done);
    ZS_CHECK_GOTO(lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                          &p->bias, sizeof p->bias),
                           fn, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"),
                  rc, done);
    ZS_CHECK_GOTO(lt_check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                          &bty, sizeof bty),
                           fn, "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)"),
                  rc, done);
  }
  ZS_CHECK_GOTO(lt_check(cublasLtMatrixLayoutCreate(&la, ty, am, an, p->lda), fn,
                         "cublasLtMatrixLayoutCreate(A)"),
                rc, done);
  ZS_CHECK_GOTO(lt_check(cublasLtMatrixLayoutCreate(&lb, ty, bm, bn, p->ldb), fn,
                         "cublasLtMatrixLayoutCreate(B)"),
                rc, done);
  ZS_CHECK_GOTO(
      lt_check(cublasLtMatrixLayoutCreate(&ld, ty, (uint64_t)p->m, (uint64_t)p->n, p->ldd), fn,
               "cublasLtMatrixLayoutCreate(D)"),
      rc, done);
  ZS_CHECK_GOTO(lt_algo(k, fn, p, desc, la, lb, ld, &algo), rc, done);
  bs = cublasLtMatmul(k->lt, desc, &alpha, p->A, la, p->B, lb, &beta, p->D, ld, p->D, ld, &algo,
                      k->workspace, ZS_LT_WORKSPACE_BYTES, k->stream);
  rc = bs == CUBLAS_STATUS_NOT_SUPPORTED ? ZS_ERR_UNSUPPORTED : lt_check(bs, fn, "cublasLtMatmul");
done:
  if (ld) cublasLtMatrixLayoutDestroy(ld);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  cublasLtMatmulDescDestroy(desc);
  return rc;
}

/* Problem p through cuBLASLt, or through the fallback GEMM where cuBLASLt has no algorithm. */
static zs_status gemm(zs_cuda_kctx *k, const char *fn, const lt_problem *p) {
  if (!k->gemm_simt) {
    zs_status rc = lt_gemm(k, fn, p);
    if (rc != ZS_ERR_UNSUPPORTED) return rc;
  }
  return zs_cuda_gemm_simt(k, p->ta == CUBLAS_OP_T, p->tb == CUBLAS_OP_T, p->m, p->n, p->k, p->A,
                           p->lda, p->B, p->ldb, p->D, p->ldd, p->accumulate, p->bias);
}

/* out[r, c] += bias[c]: the forward's bias when the pointer is too unaligned for the epilogue. */
template <typename T> __global__ void add_bias_kernel(T *out, const T *bias, int N, int OC) {
  size_t n = (size_t)N * OC;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    zs_st(&out[i], zs_ld(&out[i]) + zs_ld(&bias[i % OC]));
}

extern "C" zs_status zs_cuda_matmul_fwd(zs_cuda_kctx *k, void *out, const void *inp, const void *w,
                                        const void *bias, int N, int C, int OC) {
  static const char fn[] = "zs_cuda_matmul_fwd";
  int epi = bias && ptr_align(bias) >= 16;
  lt_problem p = {CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, w, inp, out, C, C, OC, 0, epi ? bias : NULL};
  ZS_CHECK(gemm(k, fn, &p));
  if (bias && !epi) {
    size_t n = (size_t)N * OC;
    ZS_DT_DISPATCH(k->dt, E,
                   add_bias_kernel<E>
                   <<<zs_grid(n, 256), 256, 0, k->stream>>>((E *)out, (const E *)bias, N, OC));
    return zs_kcu_launched(fn);
  }
  return ZS_OK;
}

extern "C" zs_status zs_cuda_matmul_bwd(zs_cuda_kctx *k, void *dinp, void *dw, void *dbias,
                                        const void *dout, const void *inp, const void *w, int N,
                                        int C, int OC) {
  static const char fn[] = "zs_cuda_matmul_bwd";
  if (dinp) {
    lt_problem p = {CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, w, dout, dinp, C, OC, C, 1, NULL};
    ZS_CHECK(gemm(k, fn, &p));
  }
  if (dw) {
    lt_problem p = {CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, dout, dw, C, OC, C, 1, NULL};
    ZS_CHECK(gemm(k, fn, &p));
  }
  if (dbias) {
    zs_status rc = zs_cuda_colreduce(k, dbias, NULL, dout, NULL, NULL, NULL, N, OC);
    if (rc != ZS_OK) return zs_kerr_wrap(rc, "%s (dbias)", fn);
  }
  return ZS_OK;
}
