/* A Llama-family model's Hugging Face directory as a whole: import (config.json read and checked,
 * the weights opened and checked against the layout) and export (config.json written, the
 * weights file(s) planned from the layout, unit by unit in forward order, then taken tensor by
 * tensor). The glue between common/llama_config.h, common/llama_layout.h, hf_read.h and hf_write.h.
 */
#ifndef LLAMA_HF_IO_H
#define LLAMA_HF_IO_H

#include "../common/llama_config.h"
#include "hf_read.h"
#include "hf_write.h"

/* Reads dir/config.json into c, checks it for sequence length seq (llama_config_check), opens
   dir's weights into d and checks them against c's layout (lhf_check). 0, or -1 with the first
   problem; d is closed on failure. */
int llama_hf_import(const char *dir, int seq, llama_config *c, lhf_dir *d);
/* 0 when dir is absent or holds no weights of an earlier export; else -1 with a sentence: a
   directory holding model*.safetensors or model.safetensors.index.json is refused, because files
   that a new export does not overwrite would stay, and the reader would take the old index. */
int llama_hf_export_check(const char *dir);
/* Writes dir/config.json (torch_dtype from dtype) and opens w for the model's tensors in unit
   order (llama_unit_descs order within a unit, Hugging Face's names) in files of at most
   max_shard_bytes (0: one file). dir must exist and pass llama_hf_export_check (else -1, nothing
   written). Then lhw_put each tensor, lhw_close. 0 or -1. */
int llama_hf_export_open(const char *dir, const llama_config *c, lst_dtype dtype,
                         uint64_t max_shard_bytes, lhw_writer *w);

#endif
