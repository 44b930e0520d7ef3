/* Unit tests of the GPT-2 example's host-side parts (no engine step needed):
 *  - the batch schedule: rank r's micro-step m of an N x M split is micro-batch m*N + r of the
 *    same step (the engine's deterministic order), so every split of a step into ranks x
 *    micro-steps sees the same sequences in the same order;
 *  - llm.c token files: header checks, uint16 tokens, validation tail;
 *  - safetensors: F32 / F16 / BF16 reads, and refusal of malformed headers;
 *  - the learning-rate schedules (--lr-schedule) against formulas written here, and the GPT-2
 *    parameter count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../examples/common/data.h"
#include "../examples/common/lr_schedule.h"
#include "../examples/common/metrics.h"
#include "../examples/common/util.h"
#include "../examples/gpt2/config.h"
#include "../examples/gpt2/safetensors.h"
#include "zs_test.h"

/* Writes bytes to a temporary file; returns its path (static buffer per slot). */
static const char *write_tmp(int slot, const void *p, size_t n) {
  static char paths[4][64];
  snprintf(paths[slot], sizeof paths[slot], "/tmp/zs_gpt2_parts_%d_%d", (int)getpid(), slot);
  FILE *f = fopen(paths[slot], "wb");
  if (!f || fwrite(p, 1, n, f) != n) exit(1);
  fclose(f);
  return paths[slot];
}

/* Every split of 4 micro-batches into ranks x micro-steps yields the same sequences, micro-step
   m of rank r being micro-batch m * ranks + r. */
static void test_schedule(void) {
  char text[4096];
  for (size_t i = 0; i < sizeof text; i++)
    text[i] = (char)('a' + (i * 7 + i / 13) % 26);
  gpt2_data d;
  ZS_EXPECT(gpt2_data_load(&d, write_tmp(0, text, sizeof text), 1, 0.1, 42) == 0, "%s",
            gpt2_error());
  ZS_EXPECT(d.n == (int64_t)sizeof text && d.vocab == 256, "bytes as tokens");
  ZS_EXPECT(d.n_train == d.n - (int64_t)(0.1 * d.n), "validation tail");
  enum { B = 3, T = 8 };
  int ref[4][B * T], tgt[B * T], tok[B * T];
  for (int k = 0; k < 4; k++) /* 1 rank x 4 micro-steps */
    ZS_EXPECT(gpt2_data_train_batch(&d, 5, 0, 1, k, 4, B, T, ref[k], tgt) == 0, "batch");
  const int splits[3][2] = {{4, 1}, {2, 2}, {1, 4}}; /* world, micro_steps */
  for (int s = 0; s < 3; s++)
    for (int r = 0; r < splits[s][0]; r++)
      for (int m = 0; m < splits[s][1]; m++) {
        gpt2_data_train_batch(&d, 5, r, splits[s][0], m, splits[s][1], B, T, tok, tgt);
        ZS_EXPECT(memcmp(tok, ref[m * splits[s][0] + r], sizeof tok) == 0,
                  "split %dx%d rank %d micro %d differs", splits[s][0], splits[s][1], r, m);
        for (int i = 0; i + 1 < T; i++) /* targets are the inputs shifted by one */
          ZS_EXPECT(tgt[i] == tok[i + 1], "target shift");
      }
  gpt2_data_train_batch(&d, 6, 0, 1, 0, 4, B, T, tok, tgt);
  ZS_EXPECT(memcmp(tok, ref[0], sizeof tok) != 0, "the next step draws other sequences");
  ZS_EXPECT(gpt2_data_val_batch(&d, 0, B, T, tok, tgt) == 0, "val batch");
  ZS_EXPECT(tok[0] == text[d.n_train] && tok[T - 1] == text[d.n_train + T - 1], "val from tail");
  gpt2_data_free(&d);
}

/* llm.c token file: magic, version, count, uint16 tokens. */
static void test_token_file(void) {
  int32_t buf[256 + 8] = {20240520, 1, 5};
  uint16_t *tk = (uint16_t *)(buf + 256);
  const uint16_t vals[5] = {1, 50256, 7, 300, 2};
  memcpy(tk, vals, sizeof vals);
  gpt2_data d;
  ZS_EXPECT(gpt2_data_load(&d, write_tmp(1, buf, 256 * 4 + 10), 0, 0.0, 1) == 0, "%s",
            gpt2_error());
  ZS_EXPECT(d.n == 5 && d.tokens[1] == 50256 && d.tokens[3] == 300 && d.vocab == 50257,
            "tokens n=%lld vocab=%d", (long long)d.n, d.vocab);
  gpt2_data_free(&d);
  buf[0] = 12345;
  ZS_EXPECT(gpt2_data_load(&d, write_tmp(1, buf, 256 * 4 + 10), 0, 0.0, 1) != 0, "bad magic");
  ZS_EXPECT(strstr(gpt2_error(), "magic") != NULL, "message names the magic: %s", gpt2_error());
  buf[0] = 20240520;
  buf[2] = 99; /* more tokens than the file holds */
  ZS_EXPECT(gpt2_data_load(&d, write_tmp(1, buf, 256 * 4 + 10), 0, 0.0, 1) != 0, "short file");
}

/* A safetensors file with one tensor per supported dtype. */
static void test_safetensors(void) {
  const char *hdr =
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[8,12]},"
      "\"transformer.c\":{\"dtype\":\"BF16\",\"shape\":[1,2],\"data_offsets\":[12,16]}}";
  unsigned char file[512];
  uint64_t hl = strlen(hdr);
  memcpy(file, &hl, 8);
  memcpy(file + 8, hdr, hl);
  float a[2] = {1.5f, -2.0f};
  uint16_t b[2] = {0x3c00, 0xc100}; /* 1.0, -2.5 in IEEE half */
  uint16_t c[2] = {0x4040, 0xbf80}; /* 3.0, -1.0 in bf16 */
  memcpy(file + 8 + hl, a, 8);
  memcpy(file + 16 + hl, b, 4);
  memcpy(file + 20 + hl, c, 4);
  const char *path = write_tmp(2, file, 24 + hl);
  st_file s;
  st_info t;
  float v[2];
  ZS_EXPECT(st_open(&s, path) == 0, "%s", gpt2_error());
  ZS_EXPECT(st_find(&s, "a", &t) == 1 && st_read_f32(&s, &t, v) == 0 && v[0] == 1.5f &&
                v[1] == -2.0f,
            "F32");
  ZS_EXPECT(st_find(&s, "b", &t) == 1 && st_read_f32(&s, &t, v) == 0 && v[0] == 1.0f &&
                v[1] == -2.5f,
            "F16 %g %g", v[0], v[1]);
  ZS_EXPECT(st_find(&s, "c", &t) == 1 && t.ndim == 2 && st_read_f32(&s, &t, v) == 0 &&
                v[0] == 3.0f && v[1] == -1.0f,
            "BF16 via the transformer. prefix");
  ZS_EXPECT(st_find(&s, "missing", &t) == 0, "absent tensor");
  st_close(&s);
  /* Header longer than the file, and a tensor whose offsets overrun the data. */
  hl = 1000;
  memcpy(file, &hl, 8);
  ZS_EXPECT(st_open(&s, write_tmp(2, file, 40)) != 0, "header length past the end");
  const char *bad = "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
  hl = strlen(bad);
  memcpy(file, &hl, 8);
  memcpy(file + 8, bad, hl);
  ZS_EXPECT(st_open(&s, write_tmp(2, file, 8 + hl + 8)) == 0, "opens");
  ZS_EXPECT(st_find(&s, "a", &t) == -1, "offsets beyond the data are refused");
  st_close(&s);
  memcpy(file + 8, "{not json", 9);
  hl = 9;
  memcpy(file, &hl, 8);
  ZS_EXPECT(st_open(&s, write_tmp(2, file, 17)) != 0, "malformed JSON refused");
}

/* Schedule endpoints and the 124M count of d12. */
static void test_schedule_and_sizes(void) {
  ZS_EXPECT(gpt2_lr_at(0, 100, 10, 1.0f, 0.1f) == 0.1f, "warmup starts at lr/warmup");
  ZS_EXPECT(gpt2_lr_at(9, 100, 10, 1.0f, 0.1f) == 1.0f, "warmup ends at lr");
  ZS_EXPECT(gpt2_lr_at(10, 100, 10, 1.0f, 0.1f) == 1.0f, "cosine starts at lr");
  ZS_EXPECT(fabsf(gpt2_lr_at(99, 100, 10, 1.0f, 0.1f) - 0.1f) < 1e-6f, "cosine ends at min");
  gpt2_config c = {0};
  ZS_EXPECT(gpt2_config_preset(&c, "d12") == 0, "d12");
  c.vocab = 50257;
  c.padded_vocab = gpt2_pad_vocab(c.vocab);
  ZS_EXPECT(c.padded_vocab == 50304, "padded vocab %d", c.padded_vocab);
  ZS_EXPECT(gpt2_num_params(&c) == 124475904, "d12 params %lld", (long long)gpt2_num_params(&c));
  ZS_EXPECT(gpt2_config_preset(&c, "d13") != 0, "unknown preset");
  c.heads = 7;
  ZS_EXPECT(gpt2_config_check(&c) != NULL, "heads must divide channels");
}

/* The schedule of name at step s of 100 steps, 10 of warm-up, peak 2, min-frac 0.1, by its
   definition: warm-up 2(s+1)/10; then cosine, a line from 2 at step 10 to 0.2 at step 99,
   constant 2, or wsd (2 until step 79, then a line to 0.2 at step 99 over 20 steps). */
static double lr_formula(const char *name, int s) {
  const double pi = 3.14159265358979323846;
  if (s < 10) return 2.0 * (s + 1) / 10.0;
  if (!strcmp(name, "cosine")) return 2.0 * (0.1 + 0.9 * 0.5 * (1.0 + cos(pi * (s - 10) / 89.0)));
  if (!strcmp(name, "linear")) return 2.0 * (1.0 - 0.9 * (s - 10) / 89.0);
  if (!strcmp(name, "wsd")) return s < 80 ? 2.0 : 2.0 * (1.0 - 0.9 * (s - 79) / 20.0);
  return 2.0;
}

/* Every --lr-schedule at a few steps against lr_formula; cosine is gpt2_lr_at bit for bit (the
   default before the flag existed); names parse and an unknown one is refused. */
static void test_lr_schedules(void) {
  const char *names[] = {"cosine", "linear", "constant", "wsd"};
  const int steps[] = {0, 4, 9, 10, 11, 40, 79, 80, 90, 98, 99};
  for (int i = 0; i < 4; i++) {
    ex_lr_schedule sc;
    ZS_EXPECT(ex_lr_schedule_parse(names[i], &sc) == 0, "parse %s", names[i]);
    ZS_EXPECT(!strcmp(ex_lr_schedule_name(sc), names[i]), "name of %s", names[i]);
    for (size_t j = 0; j < sizeof steps / sizeof steps[0]; j++) {
      const double got = ex_lr_at(sc, steps[j], 100, 10, 2.0f, 0.1f);
      const double want = lr_formula(names[i], steps[j]);
      ZS_EXPECT(fabs(got - want) <= 1e-6 * want, "%s at step %d: %.9g, want %.9g", names[i],
                steps[j], got, want);
    }
  }
  for (int s = 0; s < 120; s++)
    ZS_EXPECT(ex_lr_at(EX_LR_COSINE, s, 100, 10, 3e-4f, 0.1f) ==
                  gpt2_lr_at(s, 100, 10, 3e-4f, 0.1f),
              "cosine is the old schedule at step %d", s);
  ex_lr_schedule sc;
  ZS_EXPECT(ex_lr_schedule_parse("step", &sc) != 0, "unknown schedule refused");
}

int main(void) {
  test_lr_schedules();
  test_schedule();
  test_token_file();
  test_safetensors();
  test_schedule_and_sizes();
  for (int i = 0; i < 3; i++) {
    char p[64];
    snprintf(p, sizeof p, "/tmp/zs_gpt2_parts_%d_%d", (int)getpid(), i);
    remove(p);
  }
  ZS_TEST_END("test_gpt2_parts");
}
