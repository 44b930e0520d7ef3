/* Lean mode (zs_config.master = ZS_MASTER_LEAN): the bf16 params are the master, and each update
 * rounds the new fp32 value to bf16 stochastically, with random bits from a counter-based
 * generator keyed by (seed, step, unit, element). Pure integer code, included by the CPU kernels
 * (src/optim/adamw/cpu/adamw_lean*.c) and the CUDA twin (src/optim/adamw/cuda/adamw_lean.cu) alike,
 * so every path draws the same bits and rounds the same way by construction.
 *
 * The generator (docs/OPTIMIZER.md §6 states it for users):
 *   mix64(z)  = z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27; z *= 0x94d049bb133111eb;
 *               z ^= z >> 31                                   (64-bit wrap-around arithmetic)
 *   K         = mix64(mix64(mix64(seed ^ 0x9e3779b97f4a7c15) + t) + unit)
 *   k0, k1    = the low and the high 32 bits of K
 *   fmix32(x) = x ^= x >> 16; x *= 0x85ebca6b; x ^= x >> 13; x *= 0xc2b2ae35; x ^= x >> 16
 *   h(q)      = fmix32(lo ^ k0 ^ fmix32(hi ^ k1))     (q = lo + 2^32 hi; 32-bit wrap-around)
 *   bits(j)   = h(j >> 1) & 0xffff for even j, h(j >> 1) >> 16 for odd j
 * where t is the 1-based optimizer step, unit the unit's index (order of zs_engine_add_unit) and
 * j the element's flat offset in its unit (tensors back to back, before any padding): none
 * depends on the world size, the stage, the shard group or the micro-steps, so neither do the
 * bits. One 32-bit hash serves the two elements of a pair (2i, 2i + 1): the vector paths hash 16
 * pairs per 512-bit register and hand the halves out as they lie in memory, which halves the
 * multiplies of one hash per element (the lean update was bound by them). For fixed (seed, t,
 * unit, hi), h is a bijection of lo, so every 2^32 consecutive pairs of a unit see each 32-bit
 * value once, and each 16-bit value comes up equally often at even and at odd offsets.
 *
 * The rounding of an fp32 value x (bits u) with 16 random bits r (sign-magnitude: unbiased in
 * magnitude for either sign, -0 stays -0):
 *   NaN        -> (u >> 16) | 0x40 (quiet, sign and top bits kept, as round-to-nearest does)
 *   +-inf      -> +-inf
 *   finite     -> sign | min(|u| + r, 0x7f7fffff) >> 16
 * i.e. up to the next bf16 magnitude with probability (|u| & 0xffff) / 65536: the expected value
 * is x exactly (bf16 values are evenly spaced between two neighbours, subnormals included). A
 * finite value never becomes infinite: one above bf16's largest finite value (0x7f7f, about
 * 3.39e38) rounds down to it. */
#ifndef ZS_OPTIM_LEAN_H
#define ZS_OPTIM_LEAN_H

#include <stdint.h>

#include "base/mix64.h"

#if defined(__CUDACC__)
#define ZS_LEAN_FN __host__ __device__ static inline
#else
#define ZS_LEAN_FN static inline
#endif

/* The key of one update call: k0, k1 of (seed, t, unit) and the flat offset in the unit of the
   call's element 0 (element i of the call is unit element elem0 + i). */
typedef struct {
  uint32_t k0, k1;
  uint64_t elem0;
} zs_lean_key;

/* The key of step t (1-based) of unit `unit`, for a call starting at unit element elem0. */
ZS_LEAN_FN zs_lean_key zs_lean_key_make(uint64_t seed, int64_t t, int unit, uint64_t elem0) {
  const uint64_t K = zs_mix64(zs_mix64(zs_mix64(seed ^ 0x9e3779b97f4a7c15ull) + (uint64_t)t) +
                              (uint64_t)(int64_t)unit);
  zs_lean_key k;
  k.k0 = (uint32_t)K;
  k.k1 = (uint32_t)(K >> 32);
  k.elem0 = elem0;
  return k;
}

/* The 32-bit finalizer of the per-element hash (murmur3's constants). */
ZS_LEAN_FN uint32_t zs_lean_fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  return x ^ (x >> 16);
}

/* The key of the pairs whose index q has high word hi: h(q) = fmix32(lo ^ zs_lean_pair_key(...)),
   so a loop over pairs with one high word computes it once. */
ZS_LEAN_FN uint32_t zs_lean_pair_key(uint32_t k0, uint32_t k1, uint32_t hi) {
  return k0 ^ zs_lean_fmix32(hi ^ k1);
}

/* The 32-bit hash h(q) of pair q (unit elements 2q and 2q + 1) under (k0, k1). */
ZS_LEAN_FN uint32_t zs_lean_pair_hash(uint32_t k0, uint32_t k1, uint64_t q) {
  return zs_lean_fmix32((uint32_t)q ^ zs_lean_pair_key(k0, k1, (uint32_t)(q >> 32)));
}

/* The 16 random bits (0 .. 0xffff) of unit element j under (k0, k1): its half of its pair's hash.
 */
ZS_LEAN_FN uint32_t zs_lean_bits(uint32_t k0, uint32_t k1, uint64_t j) {
  return (zs_lean_pair_hash(k0, k1, j >> 1) >> (16u * (uint32_t)(j & 1u))) & 0xffffu;
}

/* The bf16 bits of fp32 bits u rounded stochastically with random bits r (< 2^16), as above. */
ZS_LEAN_FN uint16_t zs_lean_round(uint32_t u, uint32_t r) {
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN */
  if (mag == 0x7f800000u) return (uint16_t)(u >> 16);          /* +-inf */
  uint32_t s = mag + r;
  if (s > 0x7f7fffffu) s = 0x7f7fffffu; /* never rounds a finite value to inf */
  return (uint16_t)(((u & 0x80000000u) | s) >> 16);
}

#endif
