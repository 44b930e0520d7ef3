/* Option parsing for train_llama: the usage text and its own options (the model's source and
 * shape, fixed batches, export shards); the options train_gpt2 shares are common/train_args.c. */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "../common/precision.h"
#include "../common/util.h"

#ifndef LLAMA_DEFAULT_TEXT
#define LLAMA_DEFAULT_TEXT "examples/data/genesis_kjv.txt"
#endif

void llama_usage(void) {
  printf(
      "usage: train_llama [options]   (run under mpirun for several ranks)\n"
      " model:  --init-safetensors DIR (a Hugging Face Llama/Qwen2/Mistral directory: config.json\n"
      "         + model.safetensors or shards + index) | --config FILE.json (random init) |\n"
      "         [--arch llama|qwen2|mistral (llama)] [--layers L=4] [--hidden C=128]\n"
      "         [--intermediate I=352] [--heads NH=4] [--kv-heads NKV=2] [--head-dim D (C/NH)]\n"
      "         [--vocab V (256 for text, 50257 for token files)] [--max-pos P (default --seq)]\n"
      "         [--qkv-bias 0|1 (the arch's)] [--tied 0|1 (the arch's)]\n"
      " data:   [--data FILE (llm.c tokens)] [--text FILE (bytes; default the bundled text)]\n"
      "         [--batches FILE (int32 [steps][world*micro*B][seq+1], fixed batches)]\n"
      "         [--val-frac F=0.1] [--eval-every K=0 (0: at the end only)] [--eval-batches N=4]\n");
  ex_train_args_usage();
  printf(
      " engine: [--stage 0..3 (default 3)] [--device cpu|cuda (cpu)] [--dtype fp32|bf16 (fp32)]\n"
      "         [--tp N=1 (tensor parallelism: groups of N consecutive ranks split the heads and\n"
      "         the MLP; data parallelism over the rest)]\n"
      "         [--sp 1 (sequence parallelism: with --tp, each tp rank keeps 1/N of the tokens\n"
      "         outside the heads and the MLP: the residual stream and norms; --seq a\n"
      "         multiple of N)]\n"
      "         [--vocab-parallel 0|1 (1: with --tp, the embedding and the LM head split over the\n"
      "         vocabulary when N divides it; 0: both whole on every tp rank)]\n"
      "         [--reduce-dtype fp32|bf16 (fp32)] [--offload none|opt|opt+params (none)]\n"
      "         [--grad-accum-dtype fp32|bf16 (default: --dtype's; fp32: micro-steps summed in\n"
      "         fp32, zs_config.grad_accum_fp32)]\n"
      "         [--deterministic] [--recompute] [--prefetch N (default: the engine's)]\n"
      "         [--master fp32|params|remainder|lean (fp32)] [--moment-dtype fp32|bf16 (fp32)]\n"
      "         [--offload-budget BYTES|free (default 0: none; K/M/G/T suffixes)]\n"
      "         [--freeze SPEC (none; embedding, blocks, head, unit indexes N or N-M;\n"
      "         0 = embedding, 1..L = layers, L+1 = head)]\n"
      "         [--nvme-path DIR (the NVMe tier for offloaded optimizer state past the host\n"
      "         budget; default ZS_NVME_PATH)] [--offload-host-bytes BYTES (that host budget,\n"
      "         K/M/G/T suffixes as --offload-budget; default ZS_OFFLOAD_HOST_BYTES)]\n"
      " output: [--metrics FILE.jsonl] [--plot FILE.svg] [--log-every N=1 (0: last step only)]\n"
      "         [--sample-lines N (default 3 for text data, 0 for token files and --batches)]\n"
      "         [--sample-chars N=200] [--temperature F=0.8 (<= 0: greedy)]\n"
      "         [--tensorboard DIR (TensorBoard event files: tensorboard --logdir DIR)]\n"
      "         [--flight-dir DIR (each rank's last collectives when the engine fails)]\n"
      " ckpt:   [--save-every N=0 (0: none) --ckpt-dir DIR] [--resume DIR]\n"
      "         [--stop-after S=0 (0: run every step)] [--ckpt-async 1 (saves return once\n"
      "         staged; written in the background)] [--save-retries N=3 (failed saves in a row\n"
      "         survived)] [--ckpt-write-rate BYTES (per second, e.g. 200M; default unlimited)]\n"
      "         [--export DIR (Hugging Face directory)] [--export-dtype fp32|bf16 (fp32)]\n"
      "         [--export-shard-mb N=4096 (files of at most N MiB; 0 = one file)]\n"
      " Output paths (--metrics, --plot, --ckpt-dir, --export) are checked before the first\n"
      " step: missing directories are created (mkdir -p), an unwritable path is refused.\n");
}

/* Fills the defaults: a small byte-level Llama on the bundled text. */
static void defaults(llama_args *a) {
  memset(a, 0, sizeof *a);
  ex_train_args_defaults(&a->t, LLAMA_DEFAULT_TEXT);
  a->arch = "llama";
  a->layers = 4;
  a->hidden = 128;
  a->intermediate = 352;
  a->heads = 4;
  a->kv_heads = 2;
  a->qkv_bias = -1;
  a->tied = -1;
  a->export_shard_mb = 4096;
  a->t.tp = 1;
  a->vocab_parallel = 1;
}

/* train_llama's own options (ex_opt_fn; ctx: llama_args): the model's source and shape, fixed
   batches and the export's shard size. */
static int own_opt(void *ctx, const char *k, const char *v, int *hit) {
  llama_args *a = ctx;
  if (strcmp(k, "--export-shard-mb") == 0) { /* int64; a negative value keeps the default */
    int mb = -1;
    *hit = 1;
    TRY(ex_parse_int(k, v, &mb));
    if (mb >= 0) a->export_shard_mb = mb;
    return 0;
  }
  const ex_opt tab[] = {{"--layers", EX_OPT_INT, &a->layers},
                        {"--hidden", EX_OPT_INT, &a->hidden},
                        {"--intermediate", EX_OPT_INT, &a->intermediate},
                        {"--heads", EX_OPT_INT, &a->heads},
                        {"--kv-heads", EX_OPT_INT, &a->kv_heads},
                        {"--head-dim", EX_OPT_INT, &a->head_dim},
                        {"--vocab", EX_OPT_INT, &a->vocab},
                        {"--max-pos", EX_OPT_INT, &a->max_pos},
                        {"--qkv-bias", EX_OPT_INT, &a->qkv_bias},
                        {"--tied", EX_OPT_INT, &a->tied},
                        {"--tp", EX_OPT_INT, &a->t.tp},
                        {"--sp", EX_OPT_INT, &a->sp},
                        {"--vocab-parallel", EX_OPT_INT, &a->vocab_parallel},
                        {"--init-safetensors", EX_OPT_STR, &a->init_dir},
                        {"--config", EX_OPT_STR, &a->config},
                        {"--arch", EX_OPT_STR, &a->arch},
                        {"--batches", EX_OPT_STR, &a->batches}};
  return ex_opt_table(tab, sizeof tab / sizeof tab[0], k, v, hit);
}

int llama_args_parse(llama_args *a, int argc, char **argv) {
  defaults(a);
  int rc = ex_train_args_parse(&a->t, argc, argv, own_opt, a, llama_usage);
  if (rc != 0) return rc;
  TRY(ex_train_args_check_shape(&a->t));
  if (a->t.tp < 1) return gpt2_fail("--tp %d: at least 1", a->t.tp);
  if (a->sp != 0 && a->sp != 1) return gpt2_fail("--sp %d: 0 or 1", a->sp);
  if (a->vocab_parallel != 0 && a->vocab_parallel != 1)
    return gpt2_fail("--vocab-parallel %d: 0 or 1", a->vocab_parallel);
  if (a->sp && (a->t.tp < 2 || a->t.seq % a->t.tp))
    return gpt2_fail("--sp 1 splits each sequence's tokens over the tp group: it needs --tp 2 or "
                     "more and --seq a multiple of it (--tp %d, --seq %d)",
                     a->t.tp, a->t.seq);
  if (gpt2_precision_check(a->t.master, a->t.dtype)) return -1;
  TRY(ex_train_args_check_ckpt(&a->t));
  if (a->init_dir && a->config)
    return gpt2_fail("--init-safetensors DIR brings its own config.json: drop --config");
  return 0;
}
