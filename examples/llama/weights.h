/* The Llama example's weights on the engine: the units registered from the layout, initial values
 * (random, or a Hugging Face directory read tensor by tensor) and the export back to a Hugging
 * Face directory, gathered one tensor at a time. Functions return 0 or -1 (gpt2_error()). */
#ifndef LLAMA_WEIGHTS_H
#define LLAMA_WEIGHTS_H

#include <stdint.h>

#include "../common/llama_config.h"
#include "hf_read.h"
#include "zshard.h"

/* Registers the L + 2 units of c with e (before zs_engine_commit) into units[L + 2]; with tensor
   parallelism c is one tp rank's (llama_tp_local). The others take the whole model's c and move
   whole tensors (zs_unit_set_param_whole / get_param_whole: each tp rank keeps its slice). */
int llama_units_register(const llama_config *c, zs_engine *e, zs_unit **units);
/* HF's initialisation, counter-based (every rank computes the same values): normal(0, 0.02) for
   matrices and the embedding, zero biases, RMSNorm weights 1. After commit. */
int llama_init_random(const llama_config *c, zs_unit **units, uint64_t seed);
/* Every tensor of d (opened and checked by llama_hf_import) into its unit, as fp32 (F16/BF16
   widen exactly). After commit; every rank reads the files. */
int llama_init_hf(const llama_config *c, zs_unit **units, const lhf_dir *d);
/* Writes dir (created if missing) as a Hugging Face directory: config.json and the weights in
   dtype (ZS_F32 or ZS_BF16), files of at most max_shard_bytes (0: one file). Collective: every
   rank gathers each tensor (zs_unit_get_param_whole), rank 0 writes, one tensor in memory at a
   time. */
int llama_export_hf(const llama_config *c, zs_unit **units, const char *dir, zs_dtype dtype,
                    uint64_t max_shard_bytes, int rank);

#endif
