/* The Llama example's sampling (examples/llama/sample.c) on the CPU device with a fake forward
 * whose logits are a fixed function of the window's last token:
 *   1. temperature <= 0 is greedy: the tokens are the argmax chain worked out here from the same
 *      table, for temperature 0 and -1, and the seed does not change them
 *   2. temperature > 0 draws: two seeds give different sequences (the table is flat enough that
 *      the greedy chain is unlikely) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama/sample.h"
#include "zs_test.h"

enum { V = 40, T = 8, N = 24 };
static float table[V][V]; /* logits after token a: table[a][*] */

typedef struct {
  const gpt2_dev *dev;
  float *logits; /* [T, V] host buffer (CPU device) */
} fake;

/* Fills every position's logits from its own token and hands back row `row`'s. */
static int forward(void *ctx, const int *win, int row, const void **logits_row) {
  fake *f = ctx;
  for (int t = 0; t < T; t++)
    memcpy(f->logits + (size_t)t * V, table[win[t] >= 0 && win[t] < V ? win[t] : 0],
           sizeof table[0]);
  *logits_row = f->logits + (size_t)row * V;
  return 0;
}

/* Runs llama_sample and returns the token ids parsed from its text in ids; the count. */
static int sample(fake *f, float temp, uint64_t seed, int *ids) {
  char out[1024];
  ZS_EXPECT(llama_sample(forward, f, f->dev, T, V, 3, 0, 0, N, temp, seed, out, sizeof out) == 0,
            "llama_sample failed");
  int n = 0, off = 0, k;
  while (n < N && sscanf(out + off, "%d%n", &ids[n], &k) == 1) {
    n++;
    off += k;
  }
  return n;
}

int main(void) {
  uint64_t r = 12345;
  for (int a = 0; a < V; a++)
    for (int b = 0; b < V; b++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      table[a][b] = (float)((r >> 40) % 1000) / 1000.0f; /* flat: [0, 1) */
    }
  zs_kernels *k;
  ZS_OK_OR_DIE(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k));
  gpt2_dev dev = {k, ZS_F32, 4};
  fake f = {&dev, malloc((size_t)T * V * sizeof(float))};
  /* the greedy chain, from the table */
  int want[N], prev = 3;
  for (int i = 0; i < N; i++) {
    int best = 0;
    for (int b = 1; b < V; b++)
      if (table[prev][b] > table[prev][best]) best = b;
    want[i] = prev = best;
  }
  const float temps[] = {0.0f, -1.0f};
  for (int ti = 0; ti < 2; ti++)
    for (uint64_t seed = 1; seed <= 2; seed++) {
      int got[N];
      const int n = sample(&f, temps[ti], seed, got);
      ZS_EXPECT(n == N && memcmp(got, want, sizeof want) == 0,
                "temperature %g seed %llu: not the greedy chain (%d tokens, first %d, want %d)",
                (double)temps[ti], (unsigned long long)seed, n, got[0], want[0]);
    }
  int a[N], b[N];
  const int na = sample(&f, 1.0f, 1, a), nb = sample(&f, 1.0f, 2, b);
  ZS_EXPECT(na == N && nb == N && memcmp(a, b, sizeof a) != 0,
            "temperature 1: seeds 1 and 2 drew the same tokens");
  free(f.logits);
  zs_k_destroy(k);
  ZS_TEST_END("llama_sample");
}
