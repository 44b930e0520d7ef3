/* The remainder master (zs_config.master = ZS_MASTER_REMAINDER): an fp32 master held as its bf16
 * compute copy plus a 16-bit remainder, exactly. Pure bit arithmetic on the fp32 pattern b.
 *
 *   param = (b + 0x8000) >> 16        (unsigned, wrapping: round to nearest, ties away from zero
 *                                      in magnitude; the pattern 0x7fff8000.. of a NaN wraps)
 *   rem   = b & 0xffff                (= b - (param << 16) mod 2^32, read as int16)
 *   b     = (param << 16) + (int32)(int16)rem   (mod 2^32)
 *
 * A bijection between the 2^32 fp32 patterns and the (param, rem) pairs: the low 16 bits of b are
 * rem, the high ones param minus the carry that rem's sign undoes. No 16-bit remainder can do
 * this under round-to-nearest-even: an even bf16 value is the RNE image of 65537 fp32 patterns
 * (both ties round to it), one more than 16 bits tell apart. */
#ifndef ZS_BASE_BF16_REM_H
#define ZS_BASE_BF16_REM_H

#include <stdint.h>
#include <string.h>

/* The compute copy of an fp32 pattern in remainder mode (nearest, ties away from zero). */
static inline uint16_t zs_rem_param_bits(uint32_t b) {
  return (uint16_t)((b + 0x8000u) >> 16);
}

/* The remainder of an fp32 pattern (its low 16 bits, read as int16 by zs_rem_join_bits). */
static inline uint16_t zs_rem_rem_bits(uint32_t b) {
  return (uint16_t)b;
}

/* The fp32 pattern back from its compute copy and remainder. */
static inline uint32_t zs_rem_join_bits(uint16_t param, uint16_t rem) {
  return ((uint32_t)param << 16) + (uint32_t)(int32_t)(int16_t)rem;
}

/* zs_rem_param_bits of a float: bf16 rounded to nearest, ties away from zero. */
static inline uint16_t zs_f32_to_bf16_ta(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return zs_rem_param_bits(b);
}

/* Splits f into its compute copy and remainder. */
static inline void zs_rem_split(float f, uint16_t *param, uint16_t *rem) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  *param = zs_rem_param_bits(b);
  *rem = zs_rem_rem_bits(b);
}

/* The fp32 master back from its compute copy and remainder. */
static inline float zs_rem_join(uint16_t param, uint16_t rem) {
  const uint32_t b = zs_rem_join_bits(param, rem);
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

#endif
