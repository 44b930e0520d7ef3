/* Export to Hugging Face GPT-2: model.safetensors in HF's names and layouts (Conv1D weights
 * [in, out], wte without its padding rows) and the config.json beside it, so that
 * transformers' GPT2LMHeadModel.from_pretrained(dir) loads the trained model as is. */
#ifndef GPT2_HF_EXPORT_H
#define GPT2_HF_EXPORT_H

#include "layout.h"

/* Writes path (streamed by zs_engine_export_safetensors_ex: collective, every rank calls it) and,
   on rank 0, config.json in path's directory: starting from the config.json beside init_weights
   (the --init-safetensors file; NULL or no such file: none), whose fields the example does not
   describe are kept. dt: ZS_F32 or ZS_BF16. 0 or -1 (gpt2_error()). */
int gpt2_export_hf(const gpt2_units *m, const char *path, zs_dtype dt, const char *init_weights,
                   int rank);

#endif
