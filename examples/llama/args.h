/* Command line of train_llama (see llama_usage for the list). */
#ifndef LLAMA_ARGS_H
#define LLAMA_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/train_args.h"

typedef struct {
  ex_train_args t; /* the options train_gpt2 shares (common/train_args.h); --export is
                      t.export_path: a Hugging Face directory; --freeze uses gpt2_freeze_spec's
                      syntax, the last unit named "head" */
  /* Model: a Hugging Face directory (--init-safetensors: config.json + weights), a config.json
     alone (--config: random init), or a free shape (--arch and the size flags). */
  const char *init_dir, *config, *arch;
  int layers, hidden, intermediate, heads, kv_heads, head_dim, vocab, max_pos;
  int qkv_bias, tied;      /* free shapes: -1 = the arch's default */
  int sp;                  /* --sp 1: sequence parallelism over the tp group (needs --tp > 1) */
  int vocab_parallel;      /* --vocab-parallel 0: embedding and head replicated at --tp > 1 */
  const char *batches;     /* fixed batches, int32 [steps][sequences][seq + 1] (batches.h) */
  int64_t export_shard_mb; /* export: files of at most this many MiB (0: one file) */
} llama_args;

/* Defaults, then argv; 0, 1 for --help (usage printed), -1 for a bad option (gpt2_error()). */
int llama_args_parse(llama_args *a, int argc, char **argv);
/* Prints the options to stdout. */
void llama_usage(void);

#endif
