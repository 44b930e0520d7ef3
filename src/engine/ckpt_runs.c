/* Where a load finds each element (ckpt.h: zs_ckpt_runs): this engine's flat order to the saved
 * one, through the whole tensor when the tp sizes or layouts differ.
 *
 * A tensor's slice sits in the whole tensor as blocks of `blk` elements, `stride` apart, the
 * first at `at`: dim 0 one block (at q * n), dim 1 a block per row (at q * blk in each row of
 * blk * T), a tensor that is not split one block at 0. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "engine/ckpt.h"

typedef struct {
  uint64_t n, blk, stride, at; /* slice numel; its blocks in the whole tensor */
} cut;

/* The cut of a slice of n elements, rows rows, by layout (split: over T ranks, this one q). */
static cut cut_of(uint64_t n, int64_t rows, int layout, int split, int T, int q) {
  cut c = {n, n, n, 0};
  if (!split || !n) return c;
  if (layout == ZS_TP_SPLIT_DIM0) {
    c.stride = n * (uint64_t)T;
    c.at = (uint64_t)q * n;
  } else {
    c.blk = n / (uint64_t)rows;
    c.stride = c.blk * (uint64_t)T;
    c.at = (uint64_t)q * c.blk;
  }
  return c;
}

typedef struct {
  zs_ckpt_run *r;
  size_t n, cap;
} run_list;

/* Appends a run, merged into the last one when both sides continue it. */
static zs_status push(run_list *l, uint64_t dst, uint64_t src, uint64_t n, int tp) {
  zs_ckpt_run *last = l->n ? &l->r[l->n - 1] : NULL;
  if (last && last->src_tp == tp && last->dst + last->n == dst && last->src + last->n == src) {
    last->n += n;
    return ZS_OK;
  }
  if (l->n == l->cap) {
    const size_t cap = l->cap ? 2 * l->cap : 16;
    zs_ckpt_run *r = realloc(l->r, cap * sizeof *r);
    if (!r) return zs_err(ZS_ERR_OUT_OF_MEMORY, "zs_engine_load: out of host memory");
    l->r = r;
    l->cap = cap;
  }
  l->r[l->n++] = (zs_ckpt_run){dst, src, n, tp};
  return ZS_OK;
}

zs_status zs_ckpt_runs(const zs_engine *e, const zs_ckpt_manifest *m, int i, uint64_t a, uint64_t b,
                       zs_ckpt_run **runs, size_t *nruns) {
  const zs_unit *u = e->units[i];
  const zs_ckpt_unit *cu = &m->units[i];
  const int T = m->tp_size;
  run_list l = {0};
  uint64_t mine_off = 0, saved_off = 0;
  zs_status rc = ZS_OK;
  for (int k = 0; k < u->ntensors && rc == ZS_OK; k++) {
    const zs_ckpt_tensor *ct = &cu->t[k];
    const cut me = cut_of(u->lay.numel[k], u->t[k].shape[0], u->tp[k], zs_engine_tp_split(u, k),
                          e->tp_size, e->tp_rank);
    const int split = T > 1 && (ct->tp == ZS_TP_SPLIT_DIM0 || ct->tp == ZS_TP_SPLIT_DIM1);
    const cut sv = cut_of(zs_ckpt_slice_numel(ct, T), ct->shape[0], ct->tp, split, T, 0);
    /* This tensor's part of [a, b), in its own elements (none when [a, b) misses it). */
    const uint64_t lo = a > mine_off ? a - mine_off : 0;
    const uint64_t hi = b <= mine_off ? 0 : b < mine_off + me.n ? b - mine_off : me.n;
    for (uint64_t j = lo; j < hi && rc == ZS_OK;) {
      const uint64_t w = j / me.blk * me.stride + me.at + j % me.blk; /* in the whole tensor */
      uint64_t len = me.blk - j % me.blk, src, left;
      int q = 0; /* a tensor the saver did not split: tp rank 0's copy, for every loader */
      if (split) {
        const uint64_t r = w % sv.stride;
        q = (int)(r / sv.blk);
        src = w / sv.stride * sv.blk + r % sv.blk;
        left = sv.blk - r % sv.blk;
      } else {
        src = w;
        left = sv.n - w;
      }
      if (len > left) len = left;
      if (len > hi - j) len = hi - j;
      rc = push(&l, mine_off + j, saved_off + src, len, q);
      j += len;
    }
    mine_off += me.n;
    saved_off += sv.n;
  }
  if (rc != ZS_OK) {
    free(l.r);
    l.r = NULL;
    l.n = 0;
  }
  *runs = l.r;
  *nruns = l.n;
  return rc;
}
