/* Writing weights in Hugging Face's layout: model.safetensors, or, when the tensors exceed the
 * shard size, model-0000k-of-0000n.safetensors files each at most that size (a tensor larger than
 * the limit gets a file of its own) and model.safetensors.index.json ({"metadata":
 * {"total_size"}, "weight_map"}), as transformers' save_pretrained writes them. The writer is told
 * every tensor's name and shape up front (a safetensors header precedes its data), then takes the
 * tensors one at a time, in that order, and streams each to its file: the caller never holds more
 * than one tensor (the example gathers one unit at a time). config.json is llama_config_write's. */
#ifndef LLAMA_HF_WRITE_H
#define LLAMA_HF_WRITE_H

#include <stdint.h>
#include <stdio.h>

#include "convert.h"

typedef struct {
  char name[160];
  int ndim;
  int64_t shape[4];
} lhw_entry;

typedef struct {
  char dir[4096];
  lst_dtype dtype;  /* of the files */
  int n, next;      /* tensors planned, the next one to put */
  lhw_entry *e;     /* owned copy */
  int *shard;       /* per tensor: its file (0-based) */
  uint64_t *offset; /* per tensor: byte offset in its file's data section */
  int nshards;
  FILE *f; /* the open shard, NULL between shards */
  int open_shard;
  unsigned char *buf; /* conversion buffer */
} lhw_writer;

/* Plans the files for entries[0..n) in dtype (any lst_dtype) with shards of at most
   max_shard_bytes (0: one file) under dir (which must exist). Nothing is written yet. 0 or -1
   (duplicate or empty name, a shape with a zero or negative dimension). */
int lhw_open(lhw_writer *w, const char *dir, const lhw_entry *entries, int n, lst_dtype dtype,
             uint64_t max_shard_bytes);
/* Writes the next tensor: name must be the next planned one, src holds its elements in dtype
   `from` (the engine's LST_F32 or LST_BF16; converted, rounding to nearest even). 0 or -1 (out of
   order, write error); after a failure only lhw_abort is legal. */
int lhw_put(lhw_writer *w, const char *name, const void *src, lst_dtype from);
/* After the last tensor: closes the last file and writes the index (sharded only). 0, or -1 when
   tensors are missing or a write fails. Frees w either way. */
int lhw_close(lhw_writer *w);
/* Frees w without finishing (files written so far stay, incomplete). */
void lhw_abort(lhw_writer *w);
/* The name of shard k of n ("model.safetensors" when n == 1) into buf (at least 48 bytes). */
void lhw_shard_name(int k, int n, char *buf, size_t size);

#endif
