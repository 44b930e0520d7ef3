/* The shape of a Llama-family model (Llama 2/3, Qwen2, Mistral) as the Llama example trains it
 * and zshard-plan plans it (both compile this file), read from a Hugging Face config.json or set
 * from flags, checked, and written back as a config.json that transformers' from_pretrained
 * loads. What the example cannot train is refused with a sentence (llama_error()): another
 * model_type, mixtures of experts, activations other than SiLU, attention/MLP bias variants other
 * than Qwen2's q/k/v biases, RoPE scalings other than "llama3", and a sliding window shorter than
 * the sequence. */
#ifndef COMMON_LLAMA_CONFIG_H
#define COMMON_LLAMA_CONFIG_H

#include <stdint.h>

typedef enum { LLAMA_ARCH_LLAMA, LLAMA_ARCH_QWEN2, LLAMA_ARCH_MISTRAL } llama_arch;

typedef struct {
  llama_arch arch;
  int vocab;        /* V: rows of the embedding and of the LM head (no padding) */
  int hidden;       /* C */
  int intermediate; /* I: the SwiGLU width */
  int layers;       /* L */
  int heads;        /* NH query heads */
  int kv_heads;     /* NKV key/value heads, dividing NH */
  int head_dim;     /* hd: per head (hidden / heads unless config.json says otherwise) */
  int max_pos;      /* max_position_embeddings */
  double rope_theta;
  double rms_eps;
  /* RoPE frequency scaling of Llama 3.1+ (rope_scaling.rope_type "llama3"); 0: none. */
  int rope_llama3;
  double rope_factor, rope_low_freq, rope_high_freq;
  int rope_orig_max_pos;
  int qkv_bias; /* q/k/v projections have biases (Qwen2) */
  /* One tp rank's config (llama_tp_local) with fewer key-value heads than tp ranks: the whole
     model's kv heads, which its k/v projections hold (replicated; it computes with one of them,
     kv_heads 1). 0 otherwise (config.json and flags never set it). */
  int kv_whole;
  /* One tp rank's config with a vocabulary-parallel embedding and head (llama_tp_local): the
     vocabulary rows it holds, vocab / tp (rank q's are [q * vocab_part, (q + 1) * vocab_part));
     0 when they are whole (without tensor parallelism, or replicated). */
  int vocab_part;
  int tied;             /* tie_word_embeddings: the LM head is the embedding */
  int sliding_window;   /* 0: none; else the window (refused below the sequence length) */
  int bos_id, eos_id;   /* -1 when absent; kept so that an export says what the import said */
  char torch_dtype[16]; /* "float32", "bfloat16", "float16" or "" */
  /* The config.json it was loaded from ("" when set from flags): an export starts from that
     file's fields, so what the example does not read (a list of eos ids, pad_token_id, ...) is
     carried through. */
  char source[4096];
} llama_config;

/* Hugging Face's defaults of arch for every field (LlamaConfig / Qwen2Config / MistralConfig),
   shape fields included (a caller setting a free shape from flags overwrites them). */
void llama_config_defaults(llama_config *c, llama_arch arch);
/* Parses the text of a config.json; `what` names it in messages. Fields absent from the text keep
   the arch's defaults. 0, or -1 with the reason (what is unsupported, or which field is bad). */
int llama_config_parse(llama_config *c, const char *json, const char *what);
/* Reads and parses the file at path; 0 or -1. */
int llama_config_load(llama_config *c, const char *path);
/* Checks that the shape is consistent (positive sizes, kv_heads dividing heads, Qwen2's head_dim
   = hidden / heads) and trainable at sequence length seq (seq <= max_pos, no shorter sliding
   window); 0 or -1 with a sentence. */
int llama_config_check(const llama_config *c, int seq);
/* Writes c as a config.json at path, with torch_dtype = dtype ("float32", "bfloat16", ...):
   every field of c->source (when set) that c does not describe is kept as it was, bos_token_id
   and eos_token_id included (a list stays a list); the fields c describes are c's. 0 or -1. */
int llama_config_write(const llama_config *c, const char *path, const char *dtype);
/* "llama", "qwen2" or "mistral". */
const char *llama_arch_name(llama_arch a);

#endif
