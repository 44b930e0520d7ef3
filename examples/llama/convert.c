/* dtype conversions (see convert.h). The host is little-endian (x86-64, aarch64), like the files.
 */
#include "convert.h"

#include <math.h>
#include <string.h>

#include "../common/half.h"

int lst_dtype_parse(const char *name, lst_dtype *out) {
  if (strcmp(name, "F32") == 0)
    *out = LST_F32;
  else if (strcmp(name, "F16") == 0)
    *out = LST_F16;
  else if (strcmp(name, "BF16") == 0)
    *out = LST_BF16;
  else
    return -1;
  return 0;
}

const char *lst_dtype_name(lst_dtype d) {
  return d == LST_F32 ? "F32" : d == LST_F16 ? "F16" : "BF16";
}

size_t lst_dtype_size(lst_dtype d) {
  return d == LST_F32 ? 4 : 2;
}

/* float -> binary16, round to nearest even; overflow to infinity, NaN stays NaN. */
static uint16_t f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00;  /* NaN */
  if (a >= 0x477ff000u) return sign | 0x7c00; /* rounds to >= 65536: infinity */
  if (a < 0x38800000u) {                      /* below 2^-14: a subnormal half (or zero) */
    /* the value in units of 2^-24, rounded to nearest even (rintf in the default mode) */
    float x = ldexpf(fabsf(f), 24);
    return sign | (uint16_t)rintf(x);
  }
  /* normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits */
  uint32_t r = a - 0x38000000u; /* exponent - 112 << 23 */
  r += 0xfffu + ((r >> 13) & 1);
  return sign | (uint16_t)(r >> 13);
}

/* float -> bfloat16, round to nearest even; NaN stays NaN. */
static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* Element i of src as float. */
static float load(const unsigned char *src, lst_dtype from, size_t i) {
  if (from == LST_F32) {
    float f;
    memcpy(&f, src + 4 * i, 4);
    return f;
  }
  const uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
  if (from == LST_F16) return ex_f16_to_f32(h);
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

void lst_convert(const void *src, lst_dtype from, void *dst, lst_dtype to, size_t n) {
  const unsigned char *s = src;
  unsigned char *d = dst;
  if (from == to) { /* same dtype: the bits as they are */
    memcpy(dst, src, n * lst_dtype_size(to));
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const float f = load(s, from, i);
    if (to == LST_F32) {
      memcpy(d + 4 * i, &f, 4);
    } else {
      const uint16_t h = to == LST_F16 ? f32_to_f16(f) : f32_to_bf16(f);
      d[2 * i] = (uint8_t)(h & 0xff);
      d[2 * i + 1] = (uint8_t)(h >> 8);
    }
  }
}
