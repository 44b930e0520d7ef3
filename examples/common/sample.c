/* Autoregressive sampling for the training examples (see sample.h). */
#include "sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util.h"

/* Draws a token from softmax(logits / temperature) over V entries, u uniform in [0, 1). */
static int draw(float *logits, int V, float temperature, float u) {
  float mx = -INFINITY;
  for (int v = 0; v < V; v++)
    mx = fmaxf(mx, logits[v]);
  double sum = 0.0;
  for (int v = 0; v < V; v++) {
    logits[v] = expf((logits[v] - mx) / temperature);
    sum += logits[v];
  }
  double acc = 0.0, target = u * sum;
  for (int v = 0; v < V; v++) {
    acc += logits[v];
    if (acc > target) return v;
  }
  return V - 1;
}

/* The first index of the largest of V logits: greedy decoding. */
static int argmax(const float *logits, int V) {
  int best = 0;
  for (int v = 1; v < V; v++)
    if (logits[v] > logits[best]) best = v;
  return best;
}

/* Appends token v to out as text (printable bytes, newline kept) or as an id. */
static void emit(char *out, size_t size, size_t *len, int v, int is_bytes) {
  if (*len + 12 >= size) return;
  if (!is_bytes) {
    *len += (size_t)snprintf(out + *len, size - *len, "%d ", v);
    return;
  }
  out[(*len)++] = (v == '\n' || (v >= 32 && v < 127)) ? (char)v : '?';
  out[*len] = '\0';
}

int ex_sample(const ex_sampler *s, int lines, int max_tokens, float temperature, uint64_t seed,
              char *out, size_t out_size) {
  const int T = s->T, V = s->V, stride = s->stride;
  int *win = calloc((size_t)T, sizeof(int));
  float *row = malloc((size_t)stride * sizeof(float));
  if (!win || !row) {
    free(win);
    free(row);
    return gpt2_fail("out of host memory for sampling");
  }
  size_t len = 0;
  out[0] = '\0';
  int n = 1, rc = 0, newlines = 0;
  win[0] = s->start >= 0 && s->start < V ? s->start : 0;
  for (int i = 0; i < max_tokens && rc == 0; i++) {
    const void *logits = NULL;
    rc = s->fwd(s->ctx, win, n - 1, &logits);
    if (rc == 0) rc = gpt2_dev_read_f32(s->dev, row, logits, (size_t)stride);
    if (rc) break;
    /* temperature <= 0: greedy (the limit of softmax(logits / t) as t -> 0) */
    const int v = temperature > 0 ? draw(row, V, temperature, rng_uniform(seed, s->stream, i))
                                  : argmax(row, V);
    emit(out, out_size, &len, v, s->is_bytes);
    if (s->is_bytes && v == '\n' && ++newlines >= lines) break;
    if (n == T) { /* slide the window by one */
      memmove(win, win + 1, (size_t)(T - 1) * sizeof(int));
      n--;
    }
    win[n++] = v;
  }
  free(win);
  free(row);
  return rc;
}
