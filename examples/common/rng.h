/* Counter-based random numbers: value i of stream s under seed k is a pure function of (k, s, i),
 * so every rank computes identical weights and batches without sharing state. */
#ifndef COMMON_RNG_H
#define COMMON_RNG_H

#include <stdint.h>

/* 64 random bits for (seed, stream, index). */
uint64_t rng_bits(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [0, 1) with 24 bits. */
float rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);
/* Standard normal (Box-Muller on two counter draws). */
float rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

#endif
