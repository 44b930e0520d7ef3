/* The examples' optimizer-state precision flags (train_gpt2, train_llama): --master MODE
 * (zs_config.master), --moment-dtype fp32|bf16 (zs_config.moment_dtype) and --offload-budget
 * BYTES (zs_config.offload_budget_bytes), and the one-line description of the mode the memory table
 * prints. The --master names live in one table (precision.c): a new master mode is one row. */
#ifndef COMMON_PRECISION_H
#define COMMON_PRECISION_H

#include <stddef.h>

#include "zshard.h"

/* --master NAME: *master = the zs_config.master value of NAME; -1 (gpt2_error() lists the
   names) when NAME is not in the table. */
int gpt2_parse_master(const char *name, int *master);
/* The flags' combinations the example refuses itself, with its own words: --master lean needs
   --dtype bf16 (the bf16 params are the master). 0, or -1 (gpt2_error()). */
int gpt2_precision_check(int master, zs_dtype param_dtype);
/* --moment-dtype: "fp32" (or "f32") -> ZS_F32, "bf16" -> ZS_BF16; -1 otherwise. */
int gpt2_parse_moment_dtype(const char *name, zs_dtype *dt);
/* A byte count with an optional binary suffix, as zshard-plan reads one: "4096", "512K",
   "1.5M", "2G", "1T" (also k, m, g, t, and "512MiB" = "512M"); -1 for anything else (decimal
   "MB"/"GB" are refused rather than guessed) or a value that does not fit size_t. */
int gpt2_parse_bytes(const char *opt, const char *s, size_t *out);
/* The table's name of a master value ("fp32", "params", ...), "?" for one not in it. */
const char *gpt2_master_name(int master);
/* "master fp32, moments fp32, offload budget none" (or "... budget 64.00 MiB") into out. */
void gpt2_precision_describe(int master, zs_dtype moment_dtype, size_t budget, char *out, size_t n);

#endif
