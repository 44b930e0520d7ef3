/* splitmix64's finaliser: a 64-bit mixing function for counter-based random bits and hashes that
 * must be the same on every rank and device (the lean rounding's key, optim/lean.h; the call
 * records' hash, engine/calls.c). Usable from CUDA device code. */
#ifndef ZS_BASE_MIX64_H
#define ZS_BASE_MIX64_H

#include <stdint.h>

#if defined(__CUDACC__)
#define ZS_MIX64_FN __host__ __device__ static inline
#else
#define ZS_MIX64_FN static inline
#endif

/* z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27; z *= 0x94d049bb133111eb; z ^= z >> 31. */
ZS_MIX64_FN uint64_t zs_mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#endif
