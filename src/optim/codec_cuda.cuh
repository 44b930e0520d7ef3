/* The master codec on the CUDA device (codec.h's, element for element): decode an element's
 * master into fp32 (the fp32 array; the bf16 params joined with their remainders; the bf16
 * params widened), run the module's update, encode it back (the compute copy rounded to nearest
 * even; the split; lean mode's stochastic rounding keyed by unit element, optim/lean.h). A
 * module's CUDA twin supplies Op, a functor whose
 *     template <typename TS> __device__ void operator()(float &p, TS *const *st, size_t i,
 *                                                       float g) const
 * does its CPU kernel's float operations in the same order with the round-to-nearest intrinsics
 * (so that nothing is contracted), with state element i of arrays st[] (zs_ld / zs_st: bf16
 * widened on load, rounded to nearest even on store), and calls zs_codec_cuda<Op>. */
#ifndef ZS_OPTIM_CODEC_CUDA_CUH
#define ZS_OPTIM_CODEC_CUDA_CUH

#include "device/cuda/cuda_check.cuh"
#include "device/cuda/cuda_common.cuh"
#include "optim/codec_dev.h"

#define ZS_CODEC_THREADS 256

template <typename Op, typename TG, typename TP, typename TS>
__global__ void zs_codec_kernel_cuda(Op op, zs_codec_dev a, TS *s0, TS *s1) {
  TS *const st[2] = {s0, s1};
  const TG *grad = (const TG *)a.grad;
  uint16_t *pb = (uint16_t *)a.out; /* the bf16 params, in the remainder and lean modes */
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < a.n;
       i += (size_t)gridDim.x * blockDim.x) {
    const float g = zs_ld(&grad[i]);
    float p;
    if (a.master == ZS_MASTER_REMAINDER)
      p = __uint_as_float(((unsigned)pb[i] << 16) + (unsigned)(int)(short)a.rem[i]);
    else if (a.master == ZS_MASTER_LEAN)
      p = __uint_as_float((unsigned)pb[i] << 16);
    else
      p = a.fp32[i];
    op(p, st, i, g);
    if (a.master == ZS_MASTER_REMAINDER) {
      const unsigned b = __float_as_uint(p);
      pb[i] = (uint16_t)((b + 0x8000u) >> 16);
      a.rem[i] = (uint16_t)(b & 0xffffu);
    } else if (a.master == ZS_MASTER_LEAN) {
      pb[i] = zs_lean_round(__float_as_uint(p), zs_lean_bits(a.key.k0, a.key.k1, a.key.elem0 + i));
    } else {
      a.fp32[i] = p;
      if (a.out) zs_st(&((TP *)a.out)[i], p);
    }
  }
}

template <typename Op, typename TG, typename TP, typename TS>
static void zs_codec_launch(const Op &op, const zs_codec_dev &a) {
  zs_codec_kernel_cuda<Op, TG, TP, TS>
      <<<zs_grid(a.n, ZS_CODEC_THREADS), ZS_CODEC_THREADS, 0, (cudaStream_t)a.stream>>>(
          op, a, (TS *)a.state[0], (TS *)a.state[1]);
}

template <typename Op, typename TS>
static void zs_codec_launch_ts(const Op &op, const zs_codec_dev &a) {
  const int gb = a.gdt == ZS_BF16, pb = a.pdt == ZS_BF16;
  if (!gb && !pb)
    zs_codec_launch<Op, float, float, TS>(op, a);
  else if (!gb)
    zs_codec_launch<Op, float, zs_bf16, TS>(op, a);
  else if (!pb)
    zs_codec_launch<Op, zs_bf16, float, TS>(op, a);
  else
    zs_codec_launch<Op, zs_bf16, zs_bf16, TS>(op, a);
}

/* Queues the update of a (its mode, dtypes and arrays) with op; fn names the caller. */
template <typename Op>
static zs_status zs_codec_cuda(const Op &op, const zs_codec_dev *a, const char *fn) {
  if (!a || !zs_dt_ok(a->gdt) || (a->out && !zs_dt_ok(a->pdt)))
    return zs_err(ZS_ERR_INVALID_ARG, "%s: no arguments, or dtypes other than ZS_F32/ZS_BF16", fn);
  if (!a->n) return ZS_OK;
  const int packed = a->master == ZS_MASTER_REMAINDER || a->master == ZS_MASTER_LEAN;
  if (!a->grad || (packed ? !a->out || (a->master == ZS_MASTER_REMAINDER && !a->rem) : !a->fp32))
    return zs_err(ZS_ERR_INVALID_ARG, "%s: NULL gradient or master with n = %zu", fn, a->n);
  if (packed && a->pdt != ZS_BF16) /* the gradient may be fp32: grad_accum_fp32, a whole step */
    return zs_err(ZS_ERR_INVALID_ARG, "%s: the remainder and lean modes need bf16 params", fn);
  if (a->state_bf16)
    zs_codec_launch_ts<Op, zs_bf16>(op, *a);
  else
    zs_codec_launch_ts<Op, float>(op, *a);
  return zs_cu_launched(fn);
}

#endif
