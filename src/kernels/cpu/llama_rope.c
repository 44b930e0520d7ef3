/* Rotary position embedding in Hugging Face's rotate_half convention: the host table builder
 * (default and Llama-3 frequencies) and the rotation, forward and backward (its transpose). */
#include <math.h>

#include "llama_cpu.h"

#define ROPE_TWO_PI 6.283185307179586

/* HF _compute_default_rope_parameters in fp32: 1 / theta^(2i / D), exponent and power in fp32. */
static float default_inv_freq(int i, int D, double theta) {
  float e = (float)(2 * i) / (float)D;
  return 1.0f / powf((float)theta, e);
}

/* HF _compute_llama3_parameters for one frequency: wavelengths longer than
   original / low_freq_factor are slowed by `factor`, shorter than original / high_freq_factor are
   kept, and in between the two are blended linearly in original / wavelen. Evaluated as HF's fp32
   tensor ops do (python scalars rounded to fp32; `x / tensor` is reciprocal then multiply), so
   the frequencies are HF's bits. */
static float llama3_inv_freq(float inv, const zs_k_rope_llama3 *s) {
  const double old = s->original_max_position_embeddings;
  const float low_wl = (float)(old / s->low_freq_factor);
  const float high_wl = (float)(old / s->high_freq_factor);
  const float factor = (float)s->factor;
  float wl = (1.0f / inv) * (float)ROPE_TWO_PI;
  float f = wl > low_wl ? inv / factor : inv;
  if (wl < high_wl || wl > low_wl) return f;
  float smooth = ((1.0f / wl) * (float)old - (float)s->low_freq_factor) /
                 (float)(s->high_freq_factor - s->low_freq_factor);
  return (1.0f - smooth) * f / factor + smooth * f;
}

/* angle = (float)t * inv_freq in fp32, as HF's fp32 (inv_freq x positions) product; its cos and
   sin are evaluated in double and rounded once. */
void zs_cpu_rope_table(float *cos_t, float *sin_t, int T, int D, double theta,
                       const zs_k_rope_llama3 *llama3) {
  const int half = D / 2;
  for (int i = 0; i < half; i++) {
    float inv = default_inv_freq(i, D, theta);
    if (llama3) inv = llama3_inv_freq(inv, llama3);
    for (int t = 0; t < T; t++) {
      float a = (float)t * inv;
      cos_t[(size_t)t * half + i] = (float)cos((double)a);
      sin_t[(size_t)t * half + i] = (float)sin((double)a);
    }
  }
}

/* Rows are (b, t, h); every head of position t uses table row t. Each pair (x1, x2) is read
   before either is written, so out may alias inp. */
void zs_cpu_rope_fwd(float *out, const float *inp, const float *cos_t, const float *sin_t, int B,
                     int T, int H, int D) {
  const int half = D / 2;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float *c = cos_t + (size_t)t * half, *s = sin_t + (size_t)t * half;
      for (int h = 0; h < H; h++) {
        size_t o = (((size_t)b * T + t) * H + h) * D;
        for (int i = 0; i < half; i++) {
          float x1 = inp[o + i], x2 = inp[o + half + i];
          out[o + i] = x1 * c[i] - x2 * s[i];
          out[o + half + i] = x2 * c[i] + x1 * s[i];
        }
      }
    }
}

/* The rotation by +angle transposed is the rotation by -angle. */
void zs_cpu_rope_bwd(float *dinp, const float *dout, const float *cos_t, const float *sin_t, int B,
                     int T, int H, int D) {
  const int half = D / 2;
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      const float *c = cos_t + (size_t)t * half, *s = sin_t + (size_t)t * half;
      for (int h = 0; h < H; h++) {
        size_t o = (((size_t)b * T + t) * H + h) * D;
        for (int i = 0; i < half; i++) {
          float d1 = dout[o + i], d2 = dout[o + half + i];
          dinp[o + i] += d1 * c[i] + d2 * s[i];
          dinp[o + half + i] += d2 * c[i] - d1 * s[i];
        }
      }
    }
}
