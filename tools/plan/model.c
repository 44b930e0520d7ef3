/* Model descriptions -> the units the engine would register (zp_model). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const struct {
  const char *name;
  int layers, heads, channels;
} presets[] = {
    {"d12", 12, 12, 768}, {"d24", 24, 16, 1024}, {"d36", 36, 20, 1280}, {"d48", 48, 25, 1600}};

/* "N1,N2,..." (each may be written 1e6). */
static int from_list(const char *s, zp_model *m) {
  int cap = 1;
  for (const char *p = s; *p; p++)
    cap += *p == ',';
  m->numel = calloc((size_t)cap, sizeof *m->numel);
  if (!m->numel) return -1;
  const char *p = s;
  while (*p) {
    char *end;
    double v = strtod(p, &end);
    if (end == p || v < 1 || v > 9e18 || (*end && *end != ',')) {
      fprintf(stderr, "zshard-plan: --unit-sizes wants positive counts separated by commas: %s\n",
              s);
      return -1;
    }
    m->numel[m->n++] = (int64_t)v;
    p = *end ? end + 1 : end;
  }
  return m->n ? 0 : -1;
}

/* N parameters in K units, as even as integers allow. */
static int from_count(double params, int K, zp_model *m) {
  if (params > 9e18) return -1;
  const int64_t N = (int64_t)params;
  if (K > N) K = (int)N;
  m->numel = calloc((size_t)K, sizeof *m->numel);
  if (!m->numel) return -1;
  m->n = K;
  for (int i = 0; i < K; i++)
    m->numel[i] = N / K + (i < N % K);
  return 0;
}

int zp_model_build(const zp_args *a, zp_model *m) {
  memset(m, 0, sizeof *m);
  int rc = -1;
  const int kinds =
      !!a->preset + !!a->have_shape + !!a->unit_sizes + (a->params > 0) + !!a->safetensors;
  if (kinds != 1) {
    fprintf(stderr, "zshard-plan: give one model: --model, a free shape (--layers --channels "
                    "--heads), --unit-sizes, --params or --safetensors (see --help)\n");
    return -1;
  }
  if (a->preset && zp_llama_is_spec(a->preset)) {
    rc = zp_llama_units(a->preset, a->seq, a->tp, a->vocab_parallel, m);
  } else if (a->preset || a->have_shape) {
    zp_gpt g = a->gpt;
    if (a->preset) {
      size_t i = 0;
      while (i < sizeof presets / sizeof presets[0] && strcmp(presets[i].name, a->preset))
        i++;
      if (i == sizeof presets / sizeof presets[0]) {
        fprintf(stderr,
                "zshard-plan: --model is d12, d24, d36, d48, %s or a config.json path, not "
                "'%s'\n",
                zp_llama_preset_names(), a->preset);
        return -1;
      }
      g.layers = presets[i].layers;
      g.heads = presets[i].heads;
      g.channels = presets[i].channels;
      if (!g.max_seq) g.max_seq = 1024;
    } else if (!g.layers || !g.channels || !g.heads || g.channels % g.heads) {
      fprintf(stderr, "zshard-plan: a free shape needs --layers, --channels and --heads (heads "
                      "dividing channels)\n");
      return -1;
    }
    if (!g.vocab) g.vocab = 50257;
    if (!g.max_seq) g.max_seq = a->seq ? a->seq : 1024; /* as the example: positions = --seq */
    rc = zp_gpt_units(&g, m);
  } else if (a->unit_sizes) {
    rc = from_list(a->unit_sizes, m);
  } else if (a->params > 0) {
    rc = from_count(a->params, a->units, m);
  } else {
    rc = zp_safetensors_units(a->safetensors, m);
  }
  if (rc) return -1;
  if (a->tp > 1 && !m->is_llama) {
    fprintf(stderr,
            "zshard-plan: --tp %d: tensor parallelism is planned for Llama-family models "
            "(--model a preset or config.json), as train_llama splits them\n",
            a->tp);
    zp_model_free(m);
    return -1;
  }
  m->total = 0;
  for (int i = 0; i < m->n; i++)
    m->total += m->numel[i];
  if (zp_model_tensors(m)) {
    fprintf(stderr, "zshard-plan: out of host memory for the units' tensors\n");
    zp_model_free(m);
    return -1;
  }
  return 0;
}

int zp_model_freeze(const char *spec, zp_model *m) {
  if (!spec) return 0;
  m->frozen = calloc((size_t)m->n, sizeof *m->frozen);
  if (!m->frozen) return -1;
  const int L = m->is_gpt ? m->gpt.layers : -1;
  for (const char *p = spec; *p;) {
    const char *end = strchr(p, ',');
    const size_t len = end ? (size_t)(end - p) : strlen(p);
    char item[32];
    if (len == 0 || len >= sizeof item) {
      fprintf(stderr, "zshard-plan: --freeze: bad item in '%s'\n", spec);
      return -1;
    }
    memcpy(item, p, len);
    item[len] = 0;
    long lo, hi;
    char *e1, *e2;
    if (L >= 0 && !strcmp(item, "embedding")) {
      lo = hi = 0;
    } else if (L >= 0 && !strcmp(item, "blocks")) {
      lo = 1;
      hi = L;
    } else if (L >= 0 && !strcmp(item, "ln_f")) {
      lo = hi = L + 1;
    } else {
      lo = hi = strtol(item, &e1, 10);
      if (e1 != item && *e1 == '-') {
        hi = strtol(e1 + 1, &e2, 10);
        e1 = e2 == e1 + 1 ? e1 : e2;
      }
      if (e1 == item || *e1) {
        fprintf(stderr, "zshard-plan: --freeze: '%s' is not a unit index or range%s\n", item,
                L >= 0 ? " (or embedding, blocks, ln_f)" : "");
        return -1;
      }
    }
    if (lo < 0 || hi >= m->n || lo > hi) {
      fprintf(stderr, "zshard-plan: --freeze: '%s' is outside the units 0..%d\n", item, m->n - 1);
      return -1;
    }
    for (long i = lo; i <= hi; i++)
      m->frozen[i] = 1;
    p = end ? end + 1 : p + len;
  }
  for (int i = 0; i < m->n; i++)
    if (m->frozen[i] && m->numel[i] > m->largest_frozen) m->largest_frozen = m->numel[i];
  return 0;
}

void zp_model_free(zp_model *m) {
  free(m->numel);
  free(m->frozen);
  free(m->units);
  free(m->descs);
  memset(m, 0, sizeof *m);
}
