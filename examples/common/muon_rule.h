/* The examples' Muon grouping (--optimizer muon), one definition for train_gpt2, train_llama and
 * zshard-plan: the engine's optimizer stays AdamW, and every matrix of the hidden units (all but
 * the first, the embeddings, and the last, the head and the final norm) goes in a group on Muon. */
#ifndef COMMON_MUON_RULE_H
#define COMMON_MUON_RULE_H

#include "zshard.h"

/* Whether tensor d of unit u (of nunits) goes in the Muon group. */
static inline int ex_muon_takes(int u, int nunits, const zs_tensor_desc *d) {
  return u > 0 && u + 1 < nunits && d->ndim == 2;
}

#endif
