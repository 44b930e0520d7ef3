/* A Hugging Face model directory's weights: model.safetensors, or the shards named by
 * model.safetensors.index.json (its "weight_map": tensor name -> file). Opening reads every
 * file's JSON header (cJSON) and validates each entry against its file; tensors are then read
 * one at a time, converted to fp32 or bf16 in chunks (no tensor is held twice in memory).
 * llama_hf_check compares the directory with a model's layout: every expected tensor present,
 * with its shape and a supported dtype (F32, F16, BF16), and nothing else. */
#ifndef LLAMA_HF_READ_H
#define LLAMA_HF_READ_H

#include <stdint.h>
#include <stdio.h>

#include "../common/llama_config.h"
#include "convert.h"

typedef struct {
  char *name;     /* owned */
  char dtype[16]; /* as the header says (other dtypes are refused when read or checked) */
  int ndim;
  int64_t shape[8];
  uint64_t begin, end; /* byte range inside the data section of its file */
  int file;            /* index into the directory's files */
} lhf_tensor;

typedef struct {
  int nfiles;
  FILE **f;
  char **path;        /* owned */
  uint64_t *data_off; /* file offset of each data section */
  int ntensors;
  lhf_tensor *t; /* every tensor of every file, in header order */
} lhf_dir;

/* Opens dir's weights; 0, or -1 with the reason (no weights file, a malformed header or index,
   a tensor the index names missing from its file, one name in two files). Close with
   lhf_close (also after a failure). */
int lhf_open(lhf_dir *d, const char *dir);
void lhf_close(lhf_dir *d);
/* The index of the tensor named `name`, -1 when absent. */
int lhf_find(const lhf_dir *d, const char *name);
/* Element count of tensor i. */
int64_t lhf_numel(const lhf_dir *d, int i);
/* Reads tensor i into dst (lhf_numel elements of dtype `to`: LST_F32 or LST_BF16 for the engine,
   any lst_dtype accepted); 0 or -1 (unsupported dtype, read error). */
int lhf_read(const lhf_dir *d, int i, void *dst, lst_dtype to);
/* Checks d against c's layout (common/llama_layout.h): -1 naming the first missing, mis-shaped,
   unsupported dtype or unexpected tensor. A tied model's lm_head.weight, when stored with the
   embedding's shape, is accepted and not read (the head is the embedding), as are the rotary
   inv_freq buffers older Llama checkpoints carry. */
int lhf_check(const lhf_dir *d, const llama_config *c);

#endif
