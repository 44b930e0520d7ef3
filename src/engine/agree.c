/* Every rank's verdict on an outcome (agree.h). */
#include "engine/agree.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "engine/engine_internal.h"
#include "engine/fail.h"

/* The exchange failed (st): its status and message, after the operation and this rank's own
   failure (own, or "" when it had none); the engine marked failed when say asks. */
static zs_status exchange_failed(zs_engine *e, zs_status st, const char *own,
                                 const zs_agree_text *say) {
  zs_err_wrap(st, "%s: agreeing on the outcome%s%s%s", say->what,
              *own ? " (after this rank's own failure: " : "", own, *own ? ")" : "");
  return say->fail_on_exchange ? zs_engine_fail(e, st) : st;
}

zs_status zs_engine_agree_words(zs_engine *e, zs_status mine, const char *msg,
                                const zs_agree_text *say, const uint64_t *words, int n,
                                uint64_t *all) {
  char own[1024]; /* a copy: msg may be zs_last_error(), which the exchange can overwrite */
  snprintf(own, sizeof own, "%s", mine == ZS_OK ? "" : msg ? msg : zs_last_error());
  if (n < 0 || n > ZS_AGREE_MAX_WORDS)
    return zs_err(ZS_ERR_INVALID_ARG, "%s: %d words to agree on (at most %d)", say->what, n,
                  ZS_AGREE_MAX_WORDS);
  const size_t w = (size_t)n + 1;
  uint64_t row[1 + ZS_AGREE_MAX_WORDS] = {(uint64_t)(unsigned)mine};
  for (int i = 0; i < n; i++)
    row[1 + i] = words[i];
  /* Over every rank (e->all): a tp peer's failure is this rank's too (its next tp collective). */
  uint64_t *rows = all ? all : calloc((size_t)e->all_size * w, sizeof *rows);
  if (!rows)
    return exchange_failed(e, zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory"), own, say);
  const zs_status ar =
      zs_engine_allgather_u64_on(e, e->all, e->all_rank, e->all_size, row, w, rows);
  int first = -1, count = 0;
  for (int r = 0; r < e->all_size && ar == ZS_OK; r++)
    if (rows[(size_t)r * w] != ZS_OK) {
      if (first < 0) first = r;
      count++;
    }
  const zs_status fs = first >= 0 ? (zs_status)rows[(size_t)first * w] : ZS_OK;
  if (rows != all) free(rows);
  if (ar != ZS_OK) return exchange_failed(e, ar, own, say);
  if (first < 0) return ZS_OK;
  if (mine != ZS_OK) return zs_err(say->one_status ? fs : mine, "%s", own);
  char why[128]; /* the default phrase */
  snprintf(why, sizeof why, " failed (%s; that rank's zs_last_error says why)", zs_status_str(fs));
  return zs_err(say->theirs == ZS_OK ? fs : say->theirs, "%s: rank %d%s; %d of %d ranks failed",
                say->what, first, say->phrase ? say->phrase : why, count, e->all_size);
}

zs_status zs_engine_agree(zs_engine *e, zs_status mine, const char *msg, const zs_agree_text *say) {
  return zs_engine_agree_words(e, mine, msg, say, NULL, 0, NULL);
}
