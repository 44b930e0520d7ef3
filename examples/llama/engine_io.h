/* Weights between a Hugging Face directory and a zshard engine, for the Llama example: the units
 * of common/llama_layout.h added to the engine, every tensor set from the directory (read one
 * tensor at a time as fp32), and the engine's fp32 master weights written back in Hugging Face's
 * layout (hf_write.h: sharded below a size, index json), one tensor at a time. Plus the name map
 * for zs_engine_export_safetensors_ex (a single model.safetensors written by the engine itself). */
#ifndef LLAMA_ENGINE_IO_H
#define LLAMA_ENGINE_IO_H

#include "../common/llama_config.h"
#include "hf_read.h"
#include "zshard.h"

/* Adds c's units (llama_num_units of them, forward order, names of llama_unit_name) to e,
   before zs_engine_commit, into units[] (room for llama_num_units). 0 or -1 (llama_error() with
   zs_last_error()). */
int llama_engine_add_units(zs_engine *e, const llama_config *c, zs_unit **units);
/* Sets every tensor of the committed engine's units from d (checked by lhf_check against c):
   zs_unit_set_param per tensor (every rank reads the same file and sets the same values; not
   collective). 0 or -1. */
int llama_engine_load(const lhf_dir *d, const llama_config *c, zs_unit **units);
/* Writes dir/config.json (rank 0) and the master weights in dtype (LST_F32, LST_BF16 or LST_F16)
   in files of at most max_shard_bytes (0: one file), unit by unit, tensor by tensor:
   zs_unit_get_param on every rank (collective within the shard group, as it is), rank 0 writes.
   A write failure on rank 0 does not stop the gathers (the other ranks are in them); the
   function then returns -1 on rank 0 only: the caller agrees on the outcome (e.g. an
   allreduce) if it must. A rank without host memory for one tensor (fp32) returns -1 before
   the gathers, and the other ranks' gathers would then wait: the caller makes sure of that room
   (the example sizes its host buffers before training). dir must exist on rank 0. 0 or -1. */
int llama_engine_export(const llama_config *c, zs_unit **units, const char *dir, lst_dtype dtype,
                        uint64_t max_shard_bytes, int rank);
/* zs_export_tensor_fn for zs_engine_export_safetensors_ex (ctx: the llama_config): the engine's
   unit/tensor names to Hugging Face's; -1 for a tensor that is not the model's. */
int llama_export_name(void *ctx, const char *unit, const char *tensor, int ndim,
                      const int64_t *shape, zs_export_tensor *out);

#endif
