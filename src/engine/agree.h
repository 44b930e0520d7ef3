/* "Do all ranks agree?": every rank all-gathers its status (and a few words more) and returns one
 * verdict, so that no rank goes on into a collective that a failed peer will never join. The
 * failing ranks keep their own messages; the others name the first failing rank and how many
 * failed. Internal to the engine. */
#ifndef ZS_ENGINE_AGREE_H
#define ZS_ENGINE_AGREE_H

#include <stdint.h>

#include "zshard.h"

/* What the ranks that did not fail say, and what the exchange's own failure does. */
typedef struct {
  const char *what;     /* the operation, first in every message ("zs_engine_commit") */
  const char *phrase;   /* follows "rank F" in the other ranks' message ("'s tier failed ...");
                           NULL: " failed (<its status>; that rank's zs_last_error says why)" */
  zs_status theirs;     /* the status the other ranks return; ZS_OK: the first failing rank's */
  int one_status;       /* the failing ranks return the first failing rank's status too (each
                           with its own message); 0: each its own status */
  int fail_on_exchange; /* a failed exchange marks the engine failed (zs_engine_fail) */
} zs_agree_text;

/* The verdict of every rank on this rank's outcome mine (msg: its message; NULL: zs_last_error()
   as it is now). ZS_OK when every rank is OK. Else a failing rank returns its own message (with
   its own status, or the first failing rank's under say->one_status), and every other rank
   say->theirs with "<what>: rank F<phrase>; N of W ranks failed" (F the first failing rank).
   A failure of the exchange itself (or of its buffer) is returned as it is,
   "<what>: agreeing on the outcome" before its message (and this rank's own failure, if any).
   Collective over every rank (e->all, tp peers included; ranks named by their place in it):
   every rank calls it, whatever its outcome. */
zs_status zs_engine_agree(zs_engine *e, zs_status mine, const char *msg, const zs_agree_text *say);
/* zs_engine_agree that also all-gathers n (<= ZS_AGREE_MAX_WORDS) words of each rank into all
   (all_size rows of 1 + n words: the status, then the words; NULL with n = 0: none kept). */
zs_status zs_engine_agree_words(zs_engine *e, zs_status mine, const char *msg,
                                const zs_agree_text *say, const uint64_t *words, int n,
                                uint64_t *all);
#define ZS_AGREE_MAX_WORDS 7

#endif
