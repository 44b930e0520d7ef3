/* Shared by the comm tests: contributions that are a known function of (rank, index), references
 * computed locally in double, and one checker per collective. A case runs on host buffers, or on
 * device mirrors when the GPU test sets tmem (same aliasing, results copied back to compare). */
#ifndef ZS_TESTS_COMM_TEST_COMM_REF_H
#define ZS_TESTS_COMM_TEST_COMM_REF_H

#include <stdint.h>
#include <string.h>

#include "comm/comm.h"
#include "zs_test.h"

/* bf16 of a double by rounding the 8-bit significand to nearest even (independent of the code
   under test; valid for normal numbers and 0). */
static uint16_t ref_bf16(double x) {
  if (x == 0) return signbit(x) ? 0x8000 : 0;
  int e = 0;
  double m = frexp(fabs(x), &e);     /* x = m * 2^e, m in [0.5, 1) */
  double q = nearbyint(ldexp(m, 8)); /* 8 significant bits, ties to even */
  float f = (float)ldexp(q, e - 8) * (x < 0 ? -1.0f : 1.0f);
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16); /* exact: f has at most 8 significant bits */
}

/* Contribution of world rank w to element i as raw bits, for salt s (so cases differ). */
static uint64_t contrib(zs_cdt dt, int w, size_t i, int s) {
  double v = 0.5 * (double)((int)((w * 7 + (int)(i % 1000) * 3 + s * 5) % 23) - 11);
  switch (dt) {
  case ZS_CDT_F32: {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  case ZS_CDT_BF16:
    return ref_bf16(v);
  case ZS_CDT_U64:
    return 0xF000000000000000ull + (uint64_t)w * 1000003ull + i * 77ull + (uint64_t)s;
  case ZS_CDT_BYTE:
    return (uint64_t)((w * 31 + i * 7 + (size_t)s) & 0xff);
  }
  return 0;
}

/* Value of raw bits as double (f32/bf16). */
static double as_double(zs_cdt dt, uint64_t b) {
  uint32_t u = dt == ZS_CDT_BF16 ? (uint32_t)b << 16 : (uint32_t)b;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Expected sum over the members' contributions. */
static uint64_t ref_sum(zs_cdt dt, const int *members, int n, size_t i, int s) {
  if (dt == ZS_CDT_U64) {
    uint64_t t = 0;
    for (int k = 0; k < n; k++)
      t += contrib(dt, members[k], i, s);
    return t;
  }
  double t = 0;
  for (int k = 0; k < n; k++)
    t += as_double(dt, contrib(dt, members[k], i, s));
  if (dt == ZS_CDT_BF16) return ref_bf16(t);
  float f = (float)t;
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Raw bits of element i of buf. */
static uint64_t load(zs_cdt dt, const void *buf, size_t i) {
  size_t es = zs_cdt_size(dt);
  uint64_t v = 0;
  memcpy(&v, (const char *)buf + i * es, es); /* little-endian host */
  return v;
}

/* Stores raw bits into element i of buf. */
static void store(zs_cdt dt, void *buf, size_t i, uint64_t v) {
  memcpy((char *)buf + i * zs_cdt_size(dt), &v, zs_cdt_size(dt));
}

/* A buffer of n elements filled with a pattern no collective produces by accident. */
static void *garbage(zs_cdt dt, size_t n) {
  size_t bytes = n * zs_cdt_size(dt) + 8;
  void *p = malloc(bytes);
  if (!p) exit(2);
  memset(p, 0x5b, bytes);
  return p;
}

static int me_world;

/* Where the buffers of a case live: NULL = host; else device mirrors made by the GPU test. */
typedef struct {
  void *(*up)(const void *host, size_t bytes); /* device copy of host bytes */
  void (*down)(void *host, const void *dev, size_t bytes);
  void (*release)(void *dev);
  void *stream;
} zs_test_mem;
static const zs_test_mem *tmem;

/* Device mirror of a host buffer (the host buffer itself in host mode). */
static void *up(const void *h, size_t b) {
  return tmem ? tmem->up(h, b) : (void *)h;
}
/* Copies a device result back (no-op in host mode). */
static void down(void *h, const void *d, size_t b) {
  if (tmem) tmem->down(h, d, b);
}
/* Frees a device mirror (no-op in host mode). */
static void rel(void *d) {
  if (tmem) tmem->release(d);
}
/* Stream of the case: NULL in host mode. */
static void *strm(void) {
  return tmem ? tmem->stream : NULL;
}

/* Compares n elements of got against want(i); reports the first few mismatches. */
#define CHECK_ELEMS(what, dt, n, got_expr, want_expr)                                              \
  do {                                                                                             \
    int bad_ = 0;                                                                                  \
    for (size_t i = 0; i < (n); i++) {                                                             \
      uint64_t g_ = (got_expr), w_ = (want_expr);                                                  \
      if (g_ != w_ && bad_++ < 3)                                                                  \
        ZS_EXPECT(0, "rank %d %s %s count %zu: element %zu is %#llx, want %#llx", me_world, what,  \
                  zs_cdt_name_t(dt), (size_t)(n), i, (unsigned long long)g_,                       \
                  (unsigned long long)w_);                                                         \
    }                                                                                              \
  } while (0)

/* Test-side dtype name (not the library's). */
static const char *zs_cdt_name_t(zs_cdt dt) {
  return dt == ZS_CDT_F32 ? "f32" : dt == ZS_CDT_BF16 ? "bf16" : dt == ZS_CDT_U64 ? "u64" : "byte";
}

/* all_reduce in or out of place. */
static void t_all_reduce(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int inplace, int s) {
  int me = mem[zs_coll_rank(c)], g = zs_coll_size(c);
  size_t nb = n * zs_cdt_size(dt);
  void *send = garbage(dt, n), *recv = inplace ? send : garbage(dt, n);
  for (size_t i = 0; i < n; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  void *ds = up(send, nb), *dr = inplace ? ds : up(recv, nb);
  ZS_OK_OR_DIE(zs_coll_all_reduce(c, ds, dr, n, dt, strm()));
  ZS_OK_OR_DIE(zs_coll_sync(c, strm()));
  down(recv, dr, nb);
  CHECK_ELEMS(inplace ? "all_reduce in place" : "all_reduce", dt, n, load(dt, recv, i),
              ref_sum(dt, mem, g, i, s));
  if (!inplace) rel(dr), free(recv);
  rel(ds);
  free(send);
}

/* all_gather in or out of place. */
static void t_all_gather(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int inplace, int s) {
  int r = zs_coll_rank(c), me = mem[r], g = zs_coll_size(c);
  size_t nb = n * zs_cdt_size(dt), off = (size_t)r * nb;
  void *recv = garbage(dt, n * (size_t)g);
  void *send = inplace ? (char *)recv + off : garbage(dt, n);
  for (size_t i = 0; i < n; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  void *dr = up(recv, nb * (size_t)g), *ds = inplace ? (char *)dr + off : up(send, nb);
  ZS_OK_OR_DIE(zs_coll_all_gather(c, ds, dr, n, dt, strm()));
  ZS_OK_OR_DIE(zs_coll_sync(c, strm()));
  down(recv, dr, nb * (size_t)g);
  CHECK_ELEMS(inplace ? "all_gather in place" : "all_gather", dt, n * (size_t)g, load(dt, recv, i),
              contrib(dt, mem[i / (n ? n : 1)], i % (n ? n : 1), s));
  if (!inplace) rel(ds), free(send);
  rel(dr);
  free(recv);
}

/* reduce_scatter in or out of place: block r of the sum lands on rank r. */
static void t_reduce_scatter(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int inplace, int s) {
  int r = zs_coll_rank(c), me = mem[r], g = zs_coll_size(c);
  size_t nb = n * zs_cdt_size(dt), off = (size_t)r * nb;
  void *send = garbage(dt, n * (size_t)g);
  void *recv = inplace ? (char *)send + off : garbage(dt, n);
  for (size_t i = 0; i < n * (size_t)g; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  void *ds = up(send, nb * (size_t)g), *dr = inplace ? (char *)ds + off : up(recv, nb);
  ZS_OK_OR_DIE(zs_coll_reduce_scatter(c, ds, dr, n, dt, strm()));
  ZS_OK_OR_DIE(zs_coll_sync(c, strm()));
  down(recv, dr, nb);
  CHECK_ELEMS(inplace ? "reduce_scatter in place" : "reduce_scatter", dt, n, load(dt, recv, i),
              ref_sum(dt, mem, g, (size_t)r * n + i, s));
  if (!inplace) rel(dr), free(recv);
  rel(ds);
  free(send);
}

/* all_to_all: block j of send goes to rank j. */
static void t_all_to_all(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int s) {
  int r = zs_coll_rank(c), me = mem[r], g = zs_coll_size(c);
  size_t all = n * zs_cdt_size(dt) * (size_t)g;
  void *send = garbage(dt, n * (size_t)g), *recv = garbage(dt, n * (size_t)g);
  for (size_t i = 0; i < n * (size_t)g; i++)
    store(dt, send, i, contrib(dt, me, i, s));
  void *ds = up(send, all), *dr = up(recv, all);
  ZS_OK_OR_DIE(zs_coll_all_to_all(c, ds, dr, n, dt, strm()));
  ZS_OK_OR_DIE(zs_coll_sync(c, strm()));
  down(recv, dr, all);
  /* recv block j came from rank j, which sent its block r there. */
  CHECK_ELEMS("all_to_all", dt, n * (size_t)g, load(dt, recv, i),
              contrib(dt, mem[i / (n ? n : 1)], (size_t)r * n + i % (n ? n : 1), s));
  rel(ds);
  rel(dr);
  free(send);
  free(recv);
}

/* broadcast from root. */
static void t_broadcast(zs_coll *c, const int *mem, zs_cdt dt, size_t n, int root, int s) {
  size_t nb = n * zs_cdt_size(dt);
  void *buf = garbage(dt, n);
  if (zs_coll_rank(c) == root)
    for (size_t i = 0; i < n; i++)
      store(dt, buf, i, contrib(dt, mem[root], i, s));
  void *db = up(buf, nb);
  ZS_OK_OR_DIE(zs_coll_broadcast(c, db, n, dt, root, strm()));
  ZS_OK_OR_DIE(zs_coll_sync(c, strm()));
  down(buf, db, nb);
  CHECK_ELEMS("broadcast", dt, n, load(dt, buf, i), contrib(dt, mem[root], i, s));
  rel(db);
  free(buf);
}

/* Every collective, every dtype, several counts, on group c whose rank k is world rank mem[k]. */
static void all_cases(zs_coll *c, const int *mem) {
  const zs_cdt dts[] = {ZS_CDT_F32, ZS_CDT_BF16, ZS_CDT_U64};
  const size_t counts[] = {0, 1, 7, 1001};
  int s = 0;
  for (int d = 0; d < 3; d++)
    for (int k = 0; k < 4; k++, s++) {
      zs_cdt dt = dts[d];
      size_t n = counts[k];
      for (int inplace = 0; inplace < 2; inplace++) {
        t_all_reduce(c, mem, dt, n, inplace, s);
        t_all_gather(c, mem, dt, n, inplace, s + 1);
        t_reduce_scatter(c, mem, dt, n, inplace, s + 2);
      }
      t_all_to_all(c, mem, dt, n, s + 3);
      t_broadcast(c, mem, dt, n, 0, s + 4);
      t_broadcast(c, mem, dt, n, zs_coll_size(c) - 1, s + 5);
    }
  t_all_gather(c, mem, ZS_CDT_BYTE, 13, 0, 9);
  t_all_to_all(c, mem, ZS_CDT_BYTE, 5, 10);
  ZS_OK_OR_DIE(zs_coll_barrier(c));
  ZS_OK_OR_DIE(zs_coll_sync(c, NULL));
}

#endif
