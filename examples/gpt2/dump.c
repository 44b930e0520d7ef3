/* Raw tensor files for tests. */
#include "dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"

/* Writes n elements of size esz to dir/name. */
static int write_raw(const char *dir, const char *name, const void *p, size_t esz, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return gpt2_fail("cannot write %s (does the directory exist?)", path);
  size_t w = fwrite(p, esz, n, f);
  if (fclose(f) != 0 || w != n) return gpt2_fail("short write to %s", path);
  return 0;
}

/* Reads n elements of a device tensor as fp32 and writes them to dir/name. */
static int write_dev(const gpt2_dump *d, const gpt2_model *m, const char *name, const void *p,
                     size_t n) {
  float *h = malloc(n * sizeof(float));
  if (!h) return gpt2_fail("out of host memory dumping %s", name);
  int rc = gpt2_dev_read_f32(&m->dev, h, p, n);
  if (rc == 0) rc = write_raw(d->dir, name, h, sizeof(float), n);
  free(h);
  return rc;
}

/* Element count of a descriptor. */
static size_t numel(const zs_tensor_desc *t) {
  size_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    n *= (size_t)t->shape[i];
  return n;
}

int gpt2_dump_hook(void *ctx, gpt2_model *m, int u, const char *phase) {
  gpt2_dump *d = ctx;
  if (!d->active) return 0;
  char name[256];
  zs_tensor_desc desc[GPT2_MAX_UNIT_TENSORS];
  int nt = gpt2_unit_descs(&m->cfg, u, desc);
  if (strcmp(phase, "logits") == 0) {
    snprintf(name, sizeof name, "r%d.logits.f32", d->rank);
    return write_dev(d, m, name, m->logits, (size_t)m->B * m->T * m->cfg.padded_vocab);
  }
  if (strcmp(phase, "head") == 0) {
    snprintf(name, sizeof name, "r%d.grad_head.wte.f32", d->rank);
    return write_dev(d, m, name, zs_unit_grad(m->units.emb, EMB_WTE), numel(&desc[EMB_WTE]));
  }
  zs_unit *unit = gpt2_unit(&m->units, u);
  for (int t = 0; t < nt; t++) {
    snprintf(name, sizeof name, "r%d.grad.%s.%s.f32", d->rank, zs_unit_name(unit),
             gpt2_tensor_name(&m->cfg, u, t));
    TRY(write_dev(d, m, name, zs_unit_grad(unit, t), numel(&desc[t])));
  }
  return 0;
}

int gpt2_dump_batch(const gpt2_dump *d, const gpt2_model *m, const int *tok, const int *tgt) {
  size_t N = (size_t)m->B * m->T;
  char name[64];
  snprintf(name, sizeof name, "r%d.tok.i32", d->rank);
  TRY(write_raw(d->dir, name, tok, sizeof(int), N));
  snprintf(name, sizeof name, "r%d.tgt.i32", d->rank);
  TRY(write_raw(d->dir, name, tgt, sizeof(int), N));
  snprintf(name, sizeof name, "r%d.losses.f32", d->rank);
  return write_raw(d->dir, name, m->host_losses, sizeof(float), N);
}

int gpt2_dump_meta(const gpt2_dump *d, const gpt2_model *m, int world, int micro_steps) {
  if (d->rank != 0) return 0;
  char path[1024];
  snprintf(path, sizeof path, "%s/meta.json", d->dir);
  FILE *f = fopen(path, "w");
  if (!f) return gpt2_fail("cannot write %s", path);
  const gpt2_config *c = &m->cfg;
  fprintf(f,
          "{\"layers\":%d,\"channels\":%d,\"heads\":%d,\"vocab\":%d,\"padded_vocab\":%d,"
          "\"max_seq\":%d,\"B\":%d,\"T\":%d,\"world\":%d,\"micro_steps\":%d,"
          "\"dtype\":\"%s\"}\n",
          c->layers, c->channels, c->heads, c->vocab, c->padded_vocab, c->max_seq, m->B, m->T,
          world, micro_steps, m->dev.dt == ZS_BF16 ? "bf16" : "fp32");
  return fclose(f) == 0 ? 0 : gpt2_fail("cannot write %s", path);
}

int gpt2_dump_weights(const gpt2_units *u, const char *dir, int rank) {
  const gpt2_config *c = &u->cfg;
  for (int i = 0; i < gpt2_num_units(c); i++) {
    zs_tensor_desc desc[GPT2_MAX_UNIT_TENSORS];
    int nt = gpt2_unit_descs(c, i, desc);
    zs_unit *unit = gpt2_unit(u, i);
    for (int t = 0; t < nt; t++) {
      size_t n = numel(&desc[t]);
      float *h = malloc(n * sizeof(float));
      if (!h) return gpt2_fail("out of host memory dumping weights");
      zs_status st = zs_unit_get_param(unit, t, h);
      char name[256];
      snprintf(name, sizeof name, "w.%s.%s.f32", zs_unit_name(unit), gpt2_tensor_name(c, i, t));
      int rc = st != ZS_OK ? gpt2_fail_zs("zs_unit_get_param", st)
                           : (rank == 0 ? write_raw(dir, name, h, sizeof(float), n) : 0);
      free(h);
      TRY(rc);
    }
  }
  return 0;
}
