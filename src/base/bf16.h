/* bfloat16 <-> float on the CPU. bf16 is stored as uint16_t (the high half of an IEEE float).
   Rounding is to nearest, ties to even; NaN stays NaN (quiet). */
#ifndef ZS_BASE_BF16_H
#define ZS_BASE_BF16_H

#include <stdint.h>
#include <string.h>

static inline float zs_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint16_t zs_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#endif
