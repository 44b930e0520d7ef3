/* TensorBoard event files (see tb_events.h). */
#include "tb_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "util.h"

struct ex_tb {
  FILE *f;
  char path[4096];
};

uint32_t ex_crc32c(const void *p, size_t n) {
  static uint32_t table[256];
  static int ready;
  if (!ready) { /* reflected polynomial 0x1EDC6F41 */
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++)
        c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      table[i] = c;
    }
    ready = 1;
  }
  const unsigned char *b = p;
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++)
    c = table[(c ^ b[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

/* TFRecord's masking of a CRC stored beside the data it covers. */
static uint32_t masked(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

/* A protocol buffer being built (a few hundred bytes at most here). */
typedef struct {
  unsigned char b[512];
  size_t n;
} pb;

static void put_bytes(pb *m, const void *p, size_t n) {
  if (m->n + n <= sizeof m->b) memcpy(m->b + m->n, p, n);
  m->n += n; /* past the buffer: the caller sees n > sizeof b and refuses */
}
static void put_varint(pb *m, uint64_t v) {
  unsigned char t[10];
  size_t k = 0;
  do {
    t[k++] = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v);
  put_bytes(m, t, k);
}
static void put_le(pb *m, uint64_t v, int bytes) {
  unsigned char t[8];
  for (int i = 0; i < bytes; i++)
    t[i] = (unsigned char)(v >> (8 * i));
  put_bytes(m, t, (size_t)bytes);
}
/* Field `field` of wire type `wt`: 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit. */
static void put_key(pb *m, int field, int wt) {
  put_varint(m, (uint64_t)field << 3 | (uint64_t)wt);
}
static void put_len(pb *m, int field, const void *p, size_t n) {
  put_key(m, field, 2);
  put_varint(m, n);
  put_bytes(m, p, n);
}

/* Writes one record, the Event `ev`, in TFRecord framing. */
static int write_record(ex_tb *t, const pb *ev) {
  if (ev->n > sizeof ev->b) return gpt2_fail("tensorboard: a record over %zu bytes", sizeof ev->b);
  unsigned char head[12];
  const uint64_t len = ev->n;
  for (int i = 0; i < 8; i++)
    head[i] = (unsigned char)(len >> (8 * i));
  const uint32_t lc = masked(ex_crc32c(head, 8)), dc = masked(ex_crc32c(ev->b, ev->n));
  for (int i = 0; i < 4; i++)
    head[8 + i] = (unsigned char)(lc >> (8 * i));
  unsigned char tail[4];
  for (int i = 0; i < 4; i++)
    tail[i] = (unsigned char)(dc >> (8 * i));
  if (fwrite(head, 1, 12, t->f) != 12 || fwrite(ev->b, 1, ev->n, t->f) != ev->n ||
      fwrite(tail, 1, 4, t->f) != 4)
    return gpt2_fail("tensorboard: cannot write %s: %s", t->path, strerror(errno));
  return 0;
}

static double now_s(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* Event: wall_time (1, double), step (2, int64), then `rest` (its own fields). */
static void event_head(pb *ev, int64_t step) {
  double w = now_s();
  uint64_t bits;
  memcpy(&bits, &w, 8);
  ev->n = 0;
  put_key(ev, 1, 1);
  put_le(ev, bits, 8);
  if (step) {
    put_key(ev, 2, 0);
    put_varint(ev, (uint64_t)step);
  }
}

int ex_tb_open(const char *dir, ex_tb **out) {
  *out = NULL;
  ex_tb *t = calloc(1, sizeof *t);
  if (!t) return gpt2_fail("tensorboard: out of host memory");
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  snprintf(t->path, sizeof t->path, "%s/events.out.tfevents.%lld.%s.%d", dir, (long long)now_s(),
           host, (int)getpid());
  t->f = fopen(t->path, "wb");
  if (!t->f) {
    const int e = errno;
    free(t);
    return gpt2_fail("tensorboard: cannot create an event file in %s: %s", dir, strerror(e));
  }
  pb ev;
  event_head(&ev, 0);
  static const char ver[] = "brain.Event:2"; /* file_version (3, string) */
  put_len(&ev, 3, ver, sizeof ver - 1);
  if (write_record(t, &ev) != 0 || ex_tb_flush(t) != 0) {
    ex_tb_close(t);
    return -1;
  }
  *out = t;
  return 0;
}

int ex_tb_scalar(ex_tb *t, const char *tag, int64_t step, double value) {
  pb val = {.n = 0}, sum = {.n = 0}, ev;
  put_len(&val, 1, tag, strlen(tag)); /* Summary.Value: tag (1), simple_value (2, float) */
  const float f = (float)value;
  uint32_t fb;
  memcpy(&fb, &f, 4);
  put_key(&val, 2, 5);
  put_le(&val, fb, 4);
  if (val.n > sizeof val.b) return gpt2_fail("tensorboard: tag '%s' is too long", tag);
  put_len(&sum, 1, val.b, val.n); /* Summary: value (1, repeated) */
  event_head(&ev, step);
  put_len(&ev, 5, sum.b, sum.n); /* Event.summary (5) */
  return write_record(t, &ev);
}

int ex_tb_flush(ex_tb *t) {
  if (fflush(t->f) != 0)
    return gpt2_fail("tensorboard: cannot write %s: %s", t->path, strerror(errno));
  return 0;
}

const char *ex_tb_path(const ex_tb *t) {
  return t->path;
}

void ex_tb_close(ex_tb *t) {
  if (!t) return;
  if (t->f) fclose(t->f);
  free(t);
}
