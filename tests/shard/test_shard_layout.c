/* Unit layout arithmetic (src/shard/layout.c): offsets back to back, padding to a multiple of the
 * shard count (at least one element per shard), shard ranges that tile the padded buffer, and
 * tensor/shard intersections — checked against a brute-force element walk. */
#include <stdio.h>
#include <stdlib.h>

#include "shard/layout.h"
#include "zs_test.h"

/* Brute force: which tensor owns flat element x (-1 = padding). */
static int owner(const zs_tensor_desc *t, int nt, size_t x) {
  size_t base = 0;
  for (int i = 0; i < nt; i++) {
    size_t n = 1;
    for (int d = 0; d < t[i].ndim; d++)
      n *= (size_t)t[i].shape[d];
    if (x < base + n) return i;
    base += n;
  }
  return -1;
}

static void check(const zs_tensor_desc *t, int nt, int nshards) {
  zs_layout l = {0};
  ZS_OK_OR_DIE(zs_layout_build(&l, nt, t));
  size_t total = 0;
  for (int i = 0; i < nt; i++) {
    ZS_EXPECT(l.off[i] == total, "tensor %d offset %zu, want %zu", i, l.off[i], total);
    total += l.numel[i];
  }
  ZS_EXPECT(l.numel_total == total, "total %zu", l.numel_total);
  for (int r = 0; r < nshards; r++) {
    zs_layout_shard(&l, nshards, r);
    ZS_EXPECT(l.padded % (size_t)nshards == 0 && l.padded >= total &&
                  l.padded < total + nshards + (total == 0),
              "padded %zu for %zu elements, %d shards", l.padded, total, nshards);
    ZS_EXPECT(l.shard >= 1 && l.shard * (size_t)nshards == l.padded, "shard %zu", l.shard);
    ZS_EXPECT(l.shard_off == (size_t)r * l.shard, "rank %d offset %zu", r, l.shard_off);
    /* Every element of this shard belongs to exactly the tensor the overlaps report. */
    size_t covered = 0;
    for (int i = 0; i < nt; i++) {
      size_t a, b;
      if (!zs_layout_overlap(&l, i, l.shard_off, l.shard_off + l.shard, &a, &b)) continue;
      ZS_EXPECT(a < b && a >= l.shard_off && b <= l.shard_off + l.shard, "overlap bounds");
      for (size_t x = a; x < b; x++)
        ZS_EXPECT(owner(t, nt, x) == i, "element %zu owner", x);
      covered += b - a;
    }
    size_t want = 0;
    for (size_t x = l.shard_off; x < l.shard_off + l.shard; x++)
      want += owner(t, nt, x) >= 0;
    ZS_EXPECT(covered == want, "rank %d: overlaps cover %zu elements, want %zu", r, covered, want);
  }
  zs_layout_free(&l);
}

int main(void) {
  const zs_tensor_desc a[3] = {
      {"w", 2, {13, 3, 0, 0}, 0}, {"b", 1, {2, 0, 0, 0}, 1}, {"c", 1, {11, 0, 0, 0}, 0}};
  const zs_tensor_desc one[1] = {{"s", 1, {1, 0, 0, 0}, 0}};
  const zs_tensor_desc big[2] = {{"w", 4, {3, 5, 7, 2}, 0}, {"v", 3, {4, 4, 4, 0}, 0}};
  for (int n = 1; n <= 9; n++) {
    check(a, 3, n);
    check(one, 1, n);
    check(big, 2, n);
  }
  zs_layout l = {0};
  zs_tensor_desc huge[1] = {{"h", 4, {INT64_MAX / 2, 4, 4, 4}, 0}};
  ZS_EXPECT_STATUS(zs_layout_build(&l, 1, huge), ZS_ERR_INVALID_ARG); /* element count overflows */
  printf("test_shard_layout: ok\n");
  ZS_TEST_END("test_shard_layout");
}
