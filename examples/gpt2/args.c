/* Option parsing for train_gpt2: the usage text and its own options (the model's shape and
 * weights, MFU, test outputs); the options train_llama shares are common/train_args.c. */
#include "args.h"

#include <stdio.h>
#include <string.h>

#include "../common/precision.h"
#include "../common/util.h"

#ifndef GPT2_DEFAULT_TEXT
#define GPT2_DEFAULT_TEXT "examples/data/genesis_kjv.txt"
#endif

void gpt2_usage(void) {
  printf(
      "usage: train_gpt2 [options]   (run under mpirun for several ranks)\n"
      " model:  [--model d12|d24|d36|d48 (1024 positions)] | [--layers L=4] [--channels C=128]\n"
      "         [--heads NH=4] [--vocab V (256 for text, 50257 = GPT-2 BPE for token files)]\n"
      "         [--max-seq P (default --seq)] [--init-safetensors FILE (HF GPT-2 names; its\n"
      "         config.json gives the shape)]\n"
      " data:   [--data FILE (llm.c tokens)] [--text FILE (bytes; default the bundled text)]\n"
      "         [--val-frac F=0.1] [--eval-every K=0 (0: at the end only)] [--eval-batches N=4]\n");
  ex_train_args_usage();
  printf(
      " engine: [--stage 0..3 (default 3)] [--device cpu|cuda (cpu)] [--dtype fp32|bf16 (fp32)]\n"
      "         [--reduce-dtype fp32|bf16 (fp32)] [--offload none|opt|opt+params (none)]\n"
      "         [--grad-accum-dtype fp32|bf16 (default: --dtype's; fp32: micro-steps summed in\n"
      "         fp32, zs_config.grad_accum_fp32)]\n"
      "         [--deterministic] [--recompute] [--prefetch N (default: the engine's)]\n"
      "         [--freeze SPEC (none; frozen units: embedding, blocks, ln_f, unit indexes N or\n"
      "         N-M; 0 = embedding, 1..L = blocks, L+1 = ln_f; comma-separated)]\n"
      "         [--master fp32|params|remainder|lean (default fp32; optimizer-state precision: an\n"
      "         fp32 master copy, the fp32 params are the master (--dtype fp32), bf16 params + a\n"
      "         16-bit remainder (--dtype bf16), or the bf16 params are the master (--dtype "
      "bf16))]\n"
      "         [--moment-dtype fp32|bf16 (Adam m and v; default fp32)]\n"
      "         [--offload-budget BYTES|free (default 0: none; K/M/G/T suffixes; device bytes for\n"
      "         model state + engine buffers; the largest units' optimizer state goes to the host\n"
      "         until the rest fits; on the CPU device the engine's non-arena bytes; free: what "
      "is\n"
      "         free on the device at commit, the least over the ranks)]\n"
      "         [--nvme-path DIR (the NVMe tier for offloaded optimizer state past the host\n"
      "         budget; default ZS_NVME_PATH)] [--offload-host-bytes BYTES (that host budget,\n"
      "         K/M/G/T suffixes as --offload-budget; default ZS_OFFLOAD_HOST_BYTES)]\n"
      " output: [--metrics FILE.jsonl] [--plot FILE.svg] [--sample-lines N (default 3 for text\n"
      "         data, 0 for token files)] [--sample-chars N=200] [--temperature F=0.8]\n"
      "         [--log-every N=1 (0: last step only)]\n"
      "         [--peak-tflops F=989 (MFU; H100/H200 bf16 dense)]\n"
      "         [--tensorboard DIR (TensorBoard event files: tensorboard --logdir DIR)]\n"
      "         [--flight-dir DIR (each rank's last collectives when the engine fails)]\n"
      " ckpt:   [--save-every N=0 (0: none) --ckpt-dir DIR] [--resume DIR (a checkpoint or a\n"
      "         directory of them: continues step, lr schedule and data)] [--stop-after S=0 (end\n"
      "         after step S of the --steps schedule; 0: run them all)] [--ckpt-async 1 (saves\n"
      "         return once staged; written in the background)] [--save-retries N=3 (failed\n"
      "         saves in a row survived)] [--ckpt-write-rate BYTES (per second, e.g. 200M)]\n"
      "         [--export "
      "FILE.safetensors\n"
      "         (HF GPT-2 names, with config.json beside it)] [--export-dtype fp32|bf16 (fp32)]\n"
      " tests:  [--dump-grads DIR] [--dump-weights DIR] [--dump-logits FILE] [--check-frac F\n"
      "         (exit 1 unless the final loss < F x the unigram entropy of the training tokens)]\n"
      " Output paths (--metrics, --plot, --ckpt-dir, --export, --dump-*) are checked before the\n"
      " first step: missing directories are created (mkdir -p), an unwritable path is refused.\n");
}

/* Fills the defaults: a small byte-level model on the bundled text. */
static void defaults(gpt2_args *a) {
  memset(a, 0, sizeof *a);
  ex_train_args_defaults(&a->t, GPT2_DEFAULT_TEXT);
  a->layers = 4;
  a->channels = 128;
  a->heads = 0; /* 4 for a free shape; a safetensors file's config.json says */
  a->peak_tflops = 989.0;
}

/* train_gpt2's own options (ex_opt_fn; ctx: gpt2_args): the model's shape and weights, the MFU
   peak and the test outputs. */
static int own_opt(void *ctx, const char *k, const char *v, int *hit) {
  gpt2_args *a = ctx;
  const ex_opt tab[] = {{"--layers", EX_OPT_INT, &a->layers},
                        {"--channels", EX_OPT_INT, &a->channels},
                        {"--heads", EX_OPT_INT, &a->heads},
                        {"--vocab", EX_OPT_INT, &a->vocab},
                        {"--max-seq", EX_OPT_INT, &a->max_seq},
                        {"--peak-tflops", EX_OPT_DOUBLE, &a->peak_tflops},
                        {"--check-frac", EX_OPT_DOUBLE, &a->check_frac},
                        {"--model", EX_OPT_STR, &a->model},
                        {"--init-safetensors", EX_OPT_STR, &a->init_safetensors},
                        {"--dump-grads", EX_OPT_STR, &a->dump_grads},
                        {"--dump-weights", EX_OPT_STR, &a->dump_weights},
                        {"--dump-logits", EX_OPT_STR, &a->dump_logits}};
  return ex_opt_table(tab, sizeof tab / sizeof tab[0], k, v, hit);
}

int gpt2_args_parse(gpt2_args *a, int argc, char **argv) {
  defaults(a);
  int rc = ex_train_args_parse(&a->t, argc, argv, own_opt, a, gpt2_usage);
  if (rc != 0) return rc;
  TRY(ex_train_args_check_shape(&a->t));
  TRY(ex_train_args_check_ckpt(&a->t));
  if (gpt2_precision_check(a->t.master, a->t.dtype)) return -1;
  return 0;
}
