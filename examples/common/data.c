/* Token files, byte text, and the rank-independent batch schedule. */
#include "data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util.h"

#define LLMC_MAGIC 20240520
#define LLMC_HEADER_INTS 256

/* Whole file into memory. */
static unsigned char *read_all(const char *path, int64_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    gpt2_fail("cannot open data file %s", path);
    return NULL;
  }
  unsigned char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (!buf) gpt2_fail("cannot read data file %s", path);
  *size = n;
  return buf;
}

/* Parses the llm.c header and widens the uint16 tokens. */
static int parse_tokens(gpt2_data *d, const unsigned char *buf, int64_t size, const char *path) {
  int32_t h[LLMC_HEADER_INTS];
  if (size < (int64_t)sizeof h) return gpt2_fail("%s is shorter than an llm.c token header", path);
  memcpy(h, buf, sizeof h);
  if (h[0] != LLMC_MAGIC)
    return gpt2_fail("%s: bad magic %d (want %d): not an llm.c token file (a text file? drop "
                     "--data to train on bytes)",
                     path, h[0], LLMC_MAGIC);
  if (h[1] != 1) return gpt2_fail("%s: token file version %d, only version 1 is read", path, h[1]);
  int64_t n = h[2];
  if (n <= 0 || (int64_t)sizeof h + 2 * n > size)
    return gpt2_fail("%s: header says %lld tokens but the file holds %lld", path, (long long)n,
                     (long long)((size - (int64_t)sizeof h) / 2));
  d->tokens = malloc((size_t)n * sizeof(int));
  if (!d->tokens) return gpt2_fail("out of host memory for %lld tokens", (long long)n);
  const unsigned char *p = buf + sizeof h;
  int maxtok = 0;
  for (int64_t i = 0; i < n; i++) {
    d->tokens[i] = p[2 * i] | p[2 * i + 1] << 8;
    if (d->tokens[i] > maxtok) maxtok = d->tokens[i];
  }
  d->n = n;
  d->vocab = maxtok + 1;
  return 0;
}

int gpt2_data_load(gpt2_data *d, const char *path, int is_text, double val_frac, uint64_t seed) {
  memset(d, 0, sizeof *d);
  d->is_text = is_text;
  d->seed = seed;
  int64_t size;
  unsigned char *buf = read_all(path, &size);
  if (!buf) return -1;
  int rc = 0;
  if (is_text) {
    d->tokens = malloc((size_t)size * sizeof(int) + 1);
    if (d->tokens)
      for (int64_t i = 0; i < size; i++)
        d->tokens[i] = buf[i];
    d->n = size;
    d->vocab = 256;
    rc = d->tokens ? 0 : gpt2_fail("out of host memory for %s", path);
  } else {
    rc = parse_tokens(d, buf, size, path);
  }
  free(buf);
  if (rc) return rc;
  d->n_train = d->n - (int64_t)(val_frac * (double)d->n);
  if (d->n_train < 2) return gpt2_fail("%s holds too few tokens (%lld)", path, (long long)d->n);
  return 0;
}

void gpt2_data_free(gpt2_data *d) {
  free(d->tokens);
  memset(d, 0, sizeof *d);
}

/* Copies the window at `start` as inputs, shifted by one as targets. */
static void window(const gpt2_data *d, int64_t start, int T, int *tok, int *tgt) {
  for (int t = 0; t < T; t++) {
    tok[t] = d->tokens[start + t];
    tgt[t] = d->tokens[start + t + 1];
  }
}

int gpt2_data_train_batch(const gpt2_data *d, int64_t step, int rank, int world, int micro,
                          int micro_steps, int B, int T, int *tok, int *tgt) {
  int64_t span = d->n_train - T - 1; /* number of valid window starts, minus one */
  if (span < 0)
    return gpt2_fail("the training split (%lld tokens) is shorter than --seq %d + 1",
                     (long long)d->n_train, T);
  /* The engine's global order (zshard.h, deterministic): micro-step m of rank r is micro-batch
     m * world + r of the step, so every split of a step gives the bits of one rank. */
  int64_t g = step * (int64_t)world * micro_steps + (int64_t)micro * world + rank;
  for (int j = 0; j < B; j++) {
    uint64_t r = rng_bits(d->seed, 0x0da7a, (uint64_t)g * (uint64_t)B + (uint64_t)j);
    window(d, (int64_t)(r % (uint64_t)(span + 1)), T, tok + (size_t)j * T, tgt + (size_t)j * T);
  }
  return 0;
}

int gpt2_data_val_batch(const gpt2_data *d, int i, int B, int T, int *tok, int *tgt) {
  int64_t nval = d->n - d->n_train;
  int64_t per = nval - 1 >= T ? (nval - 1) / T : 0; /* whole windows in the tail */
  if (per == 0) return -1;
  for (int j = 0; j < B; j++) {
    int64_t w = ((int64_t)i * B + j) % per;
    window(d, d->n_train + w * T, T, tok + (size_t)j * T, tgt + (size_t)j * T);
  }
  return 0;
}

double gpt2_data_unigram_entropy(const gpt2_data *d) {
  int64_t *cnt = calloc((size_t)d->vocab, sizeof *cnt);
  if (!cnt) return NAN;
  for (int64_t i = 0; i < d->n_train; i++)
    cnt[d->tokens[i]]++;
  double h = 0.0;
  for (int v = 0; v < d->vocab; v++)
    if (cnt[v]) {
      double p = (double)cnt[v] / (double)d->n_train;
      h -= p * log(p);
    }
  free(cnt);
  return h;
}
