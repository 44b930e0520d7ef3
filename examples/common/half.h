/* IEEE binary16 (half) to float, exact, for the examples' safetensors readers (gpt2/safetensors.c,
 * llama/convert.c). static inline: each reader keeps its own copy and no build lists change. */
#ifndef COMMON_HALF_H
#define COMMON_HALF_H

#include <math.h>
#include <stdint.h>

/* The float of binary16 h: subnormals, infinities and NaN included (every half is a float). */
static inline float ex_f16_to_f32(uint16_t h) {
  const int sign = h >> 15, ex = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (ex == 0)
    v = ldexpf((float)man, -24);
  else if (ex == 31)
    v = man ? NAN : INFINITY;
  else
    v = ldexpf((float)(man | 0x400), ex - 25);
  return sign ? -v : v;
}

#endif
