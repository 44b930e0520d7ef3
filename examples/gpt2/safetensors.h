/* A reader for the safetensors format: 8-byte little-endian header length, a JSON header mapping
 * names to {dtype, shape, data_offsets}, then the raw data. The header is parsed with cJSON;
 * tensors are read one at a time (a 1.5B model never has to fit in memory twice). */
#ifndef GPT2_SAFETENSORS_H
#define GPT2_SAFETENSORS_H

#include <stdint.h>
#include <stdio.h>

typedef struct {
  char dtype[8]; /* "F32", "F16" or "BF16" (others are refused when read) */
  int ndim;
  int64_t shape[8];
  uint64_t begin, end; /* byte range inside the data section */
} st_info;

typedef struct {
  FILE *f;
  void *header;       /* cJSON * */
  uint64_t data_off;  /* file offset of the data section */
  uint64_t data_size; /* bytes in the data section */
} st_file;

/* Opens and validates the header; 0 or -1 (gpt2_error() says why). */
int st_open(st_file *s, const char *path);
void st_close(st_file *s);
/* Looks up `name`, also as "transformer.<name>"; 1 found, 0 absent, -1 malformed entry. */
int st_find(st_file *s, const char *name, st_info *out);
/* Element count of a tensor. */
int64_t st_numel(const st_info *t);
/* Reads the tensor converted to fp32 into dst (st_numel elements); 0 or -1. */
int st_read_f32(st_file *s, const st_info *t, float *dst);

#endif
