/* Command line of train_gpt2 (see gpt2_usage for the list). */
#ifndef GPT2_ARGS_H
#define GPT2_ARGS_H

#include <stdint.h>

#include "../common/train_args.h"

typedef struct {
  ex_train_args t;   /* the options train_llama shares (common/train_args.h); --export is
                        t.export_path: HF GPT-2 safetensors + config.json */
  const char *model; /* preset name or NULL */
  int layers, channels, heads, vocab, max_seq; /* free shape (0 = preset / default) */
  const char *init_safetensors;
  const char *dump_grads, *dump_weights, *dump_logits;
  double peak_tflops;
  double check_frac; /* exit 1 unless the final loss < check_frac * unigram entropy */
} gpt2_args;

/* Defaults, then argv; 0, 1 for --help (usage printed), -1 for a bad option (gpt2_error()). */
int gpt2_args_parse(gpt2_args *a, int argc, char **argv);
/* Prints the options to stdout. */
void gpt2_usage(void);

#endif
