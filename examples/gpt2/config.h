/* GPT-2 model shape: the named sizes (d12 = 124M .. d48 = 1.5B), vocabulary padding, parameter
 * and FLOP counts. Pure arithmetic, no engine calls. */
#ifndef GPT2_CONFIG_H
#define GPT2_CONFIG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  int max_seq;      /* rows of wpe (positions the model knows) */
  int vocab;        /* V: real vocabulary (256 for bytes, 50257 for GPT-2 BPE) */
  int padded_vocab; /* Vp: rows of wte and columns of the logits, a multiple of 64 >= V */
  int layers;       /* L */
  int heads;        /* NH */
  int channels;     /* C */
} gpt2_config;

/* Fills c with the named preset ("d12", "d24", "d36", "d48"); returns 0, or -1 for an unknown
   name. The vocabulary is left to the caller (it depends on the data). */
int gpt2_config_preset(gpt2_config *c, const char *name);
/* Rounds V up to the padded row count (multiple of 64; GPT-2's 50257 -> 50304 uses 128). */
int gpt2_pad_vocab(int vocab);
/* Checks that the shape is usable; returns NULL or a sentence saying what is wrong. */
const char *gpt2_config_check(const gpt2_config *c);
/* Number of parameters, counting the padded wte rows once (the head is tied to wte). */
int64_t gpt2_num_params(const gpt2_config *c);
/* Training FLOPs per token at sequence length T: 6N + 6*L*C*T (llm.c / PaLM accounting). */
double gpt2_flops_per_token(const gpt2_config *c, int T);

#endif
