/* Element conversions between the dtypes of safetensors files (F32, F16, BF16: IEEE binary32,
 * binary16 and bfloat16, little-endian on disk) and the engine's fp32 / bf16. Narrowing rounds
 * to nearest even and keeps NaN a NaN; widening is exact. */
#ifndef LLAMA_CONVERT_H
#define LLAMA_CONVERT_H

#include <stddef.h>
#include <stdint.h>

typedef enum { LST_F32, LST_F16, LST_BF16 } lst_dtype;

/* "F32" / "F16" / "BF16" -> *out; 0, or -1 for any other name (not recorded). */
int lst_dtype_parse(const char *name, lst_dtype *out);
const char *lst_dtype_name(lst_dtype d);
/* Bytes per element: 4 or 2. */
size_t lst_dtype_size(lst_dtype d);
/* Converts n elements of src (dtype from, little-endian bytes) into dst (dtype to). src and dst
   must not overlap. */
void lst_convert(const void *src, lst_dtype from, void *dst, lst_dtype to, size_t n);

#endif
