/* Initial weights: GPT-2's random init, or a Hugging Face GPT-2 safetensors file. Both compute the
 * full tensors on every rank (identical values) and hand them to zs_unit_set_param. */
#ifndef GPT2_INIT_H
#define GPT2_INIT_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

/* normal(0, 0.02) for matrices and embeddings, 0.02/sqrt(2L) for the two residual projections,
   zero biases, layernorm weights 1, padded wte rows 0. Counter-based: the value of element i of
   tensor t of unit u depends only on (seed, u, t, i). */
int gpt2_init_random(const gpt2_units *m, uint64_t seed);
/* Reads the shape of a GPT-2 safetensors file: layers, channels, vocab and positions from the
   tensors, checked against the config.json beside the file when there is one; the head count from
   its n_head, else `heads` (> 0), else refused. An lm_head.weight that is not wte is refused. */
int gpt2_config_from_safetensors(const char *path, int heads, gpt2_config *c);
/* The Hugging Face name of tensor t of unit u ("h.3.attn.c_attn.weight"), and whether HF stores
   it as a Conv1D weight [in, out] (transposed against zshard's [out, in]). */
void gpt2_hf_name(const gpt2_config *c, int u, int t, char *out, size_t n, int *conv1d);
/* Loads every tensor (HF names, Conv1D [in, out] weights transposed to [out, in]). */
int gpt2_init_safetensors(const gpt2_units *m, const char *path);

#endif
