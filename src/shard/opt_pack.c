/* Packed optimizer state's arithmetic (opt_pack.h). */
#include "shard/opt_pack.h"

int zs_pack_on(const zs_pack_unit *t, int i, int nstate) {
  if (i >= nstate) return 0;
  for (int k = 0; k < t->n; k++)
    if (t->numel[k] && (t->keeps[k] <= i || zs_pack_part(t, k) < t->numel[k])) return 1;
  return 0;
}

size_t zs_pack_kept(const zs_pack_unit *t, int i, size_t lo, size_t hi) {
  size_t s = 0, off = 0;
  for (int k = 0; k < t->n && off < hi; k++) {
    const size_t a = off > lo ? off : lo, e = off + zs_pack_part(t, k), b = e < hi ? e : hi;
    if (t->keeps[k] > i && a < b) s += b - a;
    off += t->numel[k];
  }
  return s;
}

size_t zs_pack_elems(const zs_pack_unit *t, int i, size_t P, int nshards, int sharded) {
  if (!sharded || nshards <= 1) return zs_pack_kept(t, i, 0, P);
  /* One walk over the kept tensors in order, cut at shard boundaries: the shards are met in
     order, so each one's count is complete when the walk leaves it; a full shard is the most. */
  const size_t sh = P / (size_t)nshards;
  size_t off = 0, cur = (size_t)-1, acc = 0, most = 0;
  for (int k = 0; k < t->n; k++) {
    size_t a = off;
    const size_t b = off + zs_pack_part(t, k);
    off += t->numel[k];
    if (t->keeps[k] <= i) continue;
    while (a < b) {
      const size_t s = a / sh, e = b < (s + 1) * sh ? b : (s + 1) * sh;
      if (s != cur) {
        if (acc > most) most = acc;
        acc = 0;
        cur = s;
      }
      acc += e - a;
      if (acc == sh) return sh;
      a = e;
    }
  }
  return acc > most ? acc : most;
}
