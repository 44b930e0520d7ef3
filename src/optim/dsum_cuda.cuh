/* Sums in double on the CUDA device for the whole-tensor optimizers' steps, over many thread
 * blocks and still the same bits on every run and every GPU: the number of blocks (partials) is
 * a function of the term count alone, each thread sums its terms in order (its stride), each
 * block's threads and then the partials meet in fixed trees. (One block would be as exact but
 * runs on one SM: a few milliseconds per tensor of tens of millions of elements.) */
#ifndef ZS_OPTIM_DSUM_CUDA_CUH
#define ZS_OPTIM_DSUM_CUDA_CUH

#include <stddef.h>
#include <stdint.h>

#define ZS_DSUM_THREADS 256
#define ZS_DSUM_MAX_PARTS 256
/* Sums of fewer terms stay in one block (zs_dsum_parts says 0): the scratch may not hold the
   partials, and the one block is fast enough there. */
#define ZS_DSUM_MIN_TERMS 65536

/* The partials zs_dsum uses for n terms: 0 below ZS_DSUM_MIN_TERMS, else one per 16 terms a
   thread, at most ZS_DSUM_MAX_PARTS. A function of n alone (the bits do not depend on the GPU). */
static inline int zs_dsum_parts(size_t n) {
  if (n < ZS_DSUM_MIN_TERMS) return 0;
  const size_t p = n / ((size_t)ZS_DSUM_THREADS * 16);
  return (int)(p < 1 ? 1 : p > ZS_DSUM_MAX_PARTS ? ZS_DSUM_MAX_PARTS : p);
}

/* The first 8-byte aligned address at or after p, as doubles (scratch for the partials: callers
   lend a float area of at least 2 * parts + 1 floats). */
static inline double *zs_dsum_scratch(float *p) {
  return (double *)(((uintptr_t)p + 7) & ~(uintptr_t)7);
}

/* The block's N threads' values (N == blockDim.x, a power of two) summed in a fixed tree in sh
   (N doubles of shared memory); thread 0 gets the total. */
template <int N> __device__ double zs_dsum_tree(double *sh, double mine) {
  sh[threadIdx.x] = mine;
  __syncthreads();
  for (int w = N / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) sh[threadIdx.x] = __dadd_rn(sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  return sh[0];
}

/* Partial blockIdx.x of the terms f(i), i < n: thread t's terms t + b * T + k * gridDim.x * T in
   order, then the block's threads in a fixed tree. */
template <typename F>
__global__ void __launch_bounds__(ZS_DSUM_THREADS) zs_dsum_part(F f, size_t n, double *part) {
  __shared__ double sh[ZS_DSUM_THREADS];
  double s = 0;
  for (size_t i = blockIdx.x * (size_t)ZS_DSUM_THREADS + threadIdx.x; i < n;
       i += (size_t)gridDim.x * ZS_DSUM_THREADS)
    s = __dadd_rn(s, f(i));
  const double t = zs_dsum_tree<ZS_DSUM_THREADS>(sh, s);
  if (threadIdx.x == 0) part[blockIdx.x] = t;
}

/* The parts partials in a fixed tree (one block), then done(total) on thread 0. */
template <typename D>
__global__ void __launch_bounds__(ZS_DSUM_MAX_PARTS)
    zs_dsum_fin(const double *part, int parts, D done) {
  __shared__ double sh[ZS_DSUM_MAX_PARTS];
  const double t =
      zs_dsum_tree<ZS_DSUM_MAX_PARTS>(sh, (int)threadIdx.x < parts ? part[threadIdx.x] : 0.0);
  if (threadIdx.x == 0) done(t);
}

#define ZS_DSUM_ONE_THREADS 1024

/* The whole sum in one block (fewer than ZS_DSUM_MIN_TERMS terms), then done(total). */
template <typename F, typename D>
__global__ void __launch_bounds__(ZS_DSUM_ONE_THREADS) zs_dsum_one(F f, size_t n, D done) {
  __shared__ double sh[ZS_DSUM_ONE_THREADS];
  double s = 0;
  for (size_t i = threadIdx.x; i < n; i += ZS_DSUM_ONE_THREADS)
    s = __dadd_rn(s, f(i));
  const double t = zs_dsum_tree<ZS_DSUM_ONE_THREADS>(sh, s);
  if (threadIdx.x == 0) done(t);
}

/* done(sum of f(i), i < n) queued on s: f a functor with __device__ double operator()(size_t),
   done one with __device__ void operator()(double) (run by one thread). scratch: of
   2 * ZS_DSUM_MAX_PARTS + 1 floats that no other work on s touches meanwhile (unused below
   ZS_DSUM_MIN_TERMS terms). */
template <typename F, typename D>
static void zs_dsum(F f, size_t n, float *scratch, D done, cudaStream_t s) {
  const int parts = zs_dsum_parts(n);
  if (!parts) {
    zs_dsum_one<<<1, ZS_DSUM_ONE_THREADS, 0, s>>>(f, n, done);
    return;
  }
  double *part = zs_dsum_scratch(scratch);
  zs_dsum_part<<<(unsigned)parts, ZS_DSUM_THREADS, 0, s>>>(f, n, part);
  zs_dsum_fin<<<1, ZS_DSUM_MAX_PARTS, 0, s>>>(part, parts, done);
}

#endif
