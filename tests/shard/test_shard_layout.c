/* Unit layout arithmetic (src/shard/layout.c): offsets back to back, padding to a multiple of the
 * shard count (at least one element per shard), shard ranges that tile the padded buffer, and
 * tensor/shard intersections — checked against a brute-force element walk; and the packed
 * optimizer arrays' arithmetic (src/shard/opt_pack.c) on random units against one too; and a tp
 * slice's share of its whole tensor's first elements (src/shard/tp_slice.c) against a walk over
 * the whole tensor's elements. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shard/layout.h"
#include "shard/opt_pack.h"
#include "shard/tp_slice.h"
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

/* Random units of up to 6 tensors (0 to 40 elements, keeping 0 to 2 arrays, over all their
   elements or a prefix of 0 to numel + 2) on 1 to 8 shards, against an element walk: whether
   array i is packed (a tensor with elements keeps i or fewer of the unit's nstate, or keeps it
   over fewer than its elements), its elements on every rank (the most any shard keeps, or the
   whole unit's), and each kept element's packed index (its rank among the kept elements of its
   shard, below that length). */
static void check_pack(unsigned seed) {
  srand(seed);
  for (int trial = 0; trial < 400; trial++) {
    size_t numel[6], part[6], pos_of[256];
    int keeps[6], nt = 1 + rand() % 6, nstate = 0, owner_of[256], some = 0;
    size_t total = 0;
    for (int k = 0; k < nt; k++) {
      numel[k] = (size_t)(rand() % 5 == 0 ? 0 : rand() % 41);
      keeps[k] = rand() % 3;
      part[k] = rand() % 2 ? SIZE_MAX : (size_t)(rand() % (int)(numel[k] + 3));
      some |= part[k] != SIZE_MAX;
      if (keeps[k] > nstate) nstate = keeps[k];
      for (size_t x = 0; x < numel[k]; x++) {
        owner_of[total + x] = k;
        pos_of[total + x] = x;
      }
      total += numel[k];
    }
    const zs_pack_unit u = {nt, numel, keeps, some || rand() % 2 ? part : NULL};
    const int S = 1 + rand() % 8;
    const size_t P =
        total < (size_t)S ? (size_t)S : (total + (size_t)S - 1) / (size_t)S * (size_t)S;
    const size_t sh = P / (size_t)S;
    for (int i = 0; i < 2; i++) {
      int on = 0;
      for (int k = 0; k < nt; k++)
        on |= i < nstate && numel[k] > 0 && (keeps[k] <= i || part[k] < numel[k]);
      ZS_EXPECT(zs_pack_on(&u, i, nstate) == on, "trial %d array %d: packed %d, want %d", trial, i,
                zs_pack_on(&u, i, nstate), on);
      size_t most = 0, all = 0;
      for (int r = 0; r < S; r++) {
        size_t n = 0;
        for (size_t x = (size_t)r * sh; x < (size_t)(r + 1) * sh; x++) {
          const int kept = x < total && keeps[owner_of[x]] > i && pos_of[x] < part[owner_of[x]];
          if (kept)
            ZS_EXPECT(zs_pack_kept(&u, i, (size_t)r * sh, x) == n,
                      "trial %d array %d rank %d element %zu: index %zu, want %zu", trial, i, r, x,
                      zs_pack_kept(&u, i, (size_t)r * sh, x), n);
          n += (size_t)kept;
        }
        if (n > most) most = n;
        all += n;
      }
      ZS_EXPECT(zs_pack_elems(&u, i, P, S, 1) == most && zs_pack_elems(&u, i, P, S, 0) == all,
                "trial %d array %d on %d shards: %zu and %zu elements, want %zu and %zu", trial, i,
                S, zs_pack_elems(&u, i, P, S, 1), zs_pack_elems(&u, i, P, S, 0), most, all);
    }
  }
}

/* zs_tp_prefix_share on every slice of random whole tensors R x C split over T on either
   dimension, every prefix: the whole tensor's first `prefix` elements, walked in row-major order
   and placed in the slices by zs_tp_slice_copy, land on each slice's first `share` elements. */
static void check_prefix_share(void) {
  float w[24 * 24], sl[24 * 24];
  for (int lay = ZS_TP_SPLIT_DIM0; lay <= ZS_TP_SPLIT_DIM1; lay++)
    for (int T = 2; T <= 4; T++)
      for (int R = T; R <= 12; R += 5)
        for (int C = T; C <= 12; C += 3) {
          const int sr = lay == ZS_TP_SPLIT_DIM0 ? R / T : R,
                    sc = lay == ZS_TP_SPLIT_DIM0 ? C : C / T;
          if (sr * T != R && lay == ZS_TP_SPLIT_DIM0) continue;
          if (sc * T != C && lay == ZS_TP_SPLIT_DIM1) continue;
          const size_t n = (size_t)sr * (size_t)sc;
          for (size_t prefix = 0; prefix <= (size_t)(R * C) + 2; prefix++)
            for (int q = 0; q < T; q++) {
              for (int i = 0; i < R * C; i++)
                w[i] = (size_t)i < prefix ? 1.0f : 0.0f;
              zs_tp_slice_copy(lay, sr, n, q, T, w, sl, 1);
              size_t kept = 0;
              while (kept < n && sl[kept] == 1.0f)
                kept++;
              int rest = 0; /* nothing of the prefix past the slice's first `kept` elements */
              for (size_t i = kept; i < n; i++)
                rest += sl[i] == 1.0f;
              const size_t got = zs_tp_prefix_share(lay, sr, n, q, T, prefix);
              ZS_EXPECT(rest == 0 && got == kept,
                        "layout %d T %d %d x %d slice %d prefix %zu: share %zu, walk %zu%s", lay, T,
                        R, C, q, prefix, got, kept, rest ? " (not a prefix)" : "");
            }
        }
}

int main(void) {
  check_pack(7);
  check_prefix_share();
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
