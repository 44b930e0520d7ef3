/* The two inner loops of the CPU attention kernels (GPT-2 and grouped-query): dot and axpy over
 * float rows. Internal to src/kernels/cpu; static inline, so each includer gets its own copy.
 */
#ifndef ZS_KERNELS_CPU_VEC4_H
#define ZS_KERNELS_CPU_VEC4_H

#include <string.h>

/* The two inner loops (dot, axpy) use 4-wide vectors through the GNU vector extension: the build
   has neither -ffast-math (which a vectorised reduction needs) nor -O3, and these loops are most
   of the attention's time. Loads and stores go through memcpy (rows are not 16-byte aligned). A
   plain scalar version is used by other compilers; results differ only by summation order. */
#if defined(__GNUC__)
typedef float v4f __attribute__((vector_size(16)));
static inline v4f ld4(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void st4(float *p, v4f v) {
  memcpy(p, &v, sizeof v);
}

/* a . b over n floats: two vector partial sums, then the lanes, then the tail. */
static inline float dot(const float *a, const float *b, int n) {
  v4f s0 = {0, 0, 0, 0}, s1 = {0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 += ld4(a + i) * ld4(b + i);
    s1 += ld4(a + i + 4) * ld4(b + i + 4);
  }
  for (; i + 4 <= n; i += 4)
    s0 += ld4(a + i) * ld4(b + i);
  s0 += s1;
  float s = (s0[0] + s0[1]) + (s0[2] + s0[3]);
  for (; i < n; i++)
    s += a[i] * b[i];
  return s;
}

/* y += a * x over n floats. */
static inline void axpy(float *y, float a, const float *x, int n) {
  v4f av = {a, a, a, a};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    st4(y + i, ld4(y + i) + av * ld4(x + i));
  for (; i < n; i++)
    y[i] += a * x[i];
}
#else
static inline float dot(const float *a, const float *b, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}
static inline void axpy(float *y, float a, const float *x, int n) {
  for (int i = 0; i < n; i++)
    y[i] += a * x[i];
}
#endif

#endif
