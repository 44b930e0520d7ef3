/* The Llama example's Hugging Face I/O without Python (examples/llama/):
 *   1. dtype narrowing (F32 -> BF16, F32 -> F16) against an independent reference: the nearest of
 *      the two neighbouring representable values worked out in double, ties to the even one
 *   2. round trip: a random Llama (GQA, untied) and Qwen2 (q/k/v biases, tied) written with
 *      llama_hf_export_open + lhw_put (sharded and one file) in F32, F16 and BF16 and read back by
 *      llama_hf_import + lhf_read: the same bits, and config.json's fields the same
 *   3. refusals, each naming what is wrong: missing, extra and mis-shaped tensors, a dtype the
 *      reader does not convert, a truncated file, tensors written out of order, model types and
 *      features the example does not train (model_type, mixture of experts, sliding window), an
 *      export into a directory holding an earlier export's weights
 *   4. crafted safetensors headers: offsets not integers inside the data, byte counts that wrap
 *      64 bits, overlapping tensors
 *   5. config.json token ids as real configs give them (lists, 0, null)
 *   6. an export's config.json carries the source's fields the example does not read (a list of
 *      eos ids stays a list, pad_token_id, nested objects), with the fields it does read its own */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/llama_config.h"
#include "common/llama_layout.h"
#include "common/llama_util.h"
#include "llama/convert.h"
#include "llama/hf_io.h"
#include "tiny_config.h"
#include "zs_test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

/* The representable neighbours of x in a format with `man` mantissa bits, min normal exponent
   emin, via frexp in double; returns the nearest, ties to even mantissa. Used for normal range
   values only. */
static double nearest(double x, int man, int emin) {
  int ex;
  frexp(fabs(x), &ex); /* |x| in [2^(ex-1), 2^ex) */
  int e = ex - 1 < emin ? emin : ex - 1;
  const double ulp = ldexp(1.0, e - man);
  const double lo = floor(fabs(x) / ulp) * ulp, hi = lo + ulp;
  const double dl = fabs(x) - lo, dh = hi - fabs(x);
  double r;
  if (dl < dh)
    r = lo;
  else if (dh < dl)
    r = hi;
  else
    r = fmod(lo / ulp, 2.0) == 0 ? lo : hi;
  return x < 0 ? -r : r;
}

static void test_convert(void) {
  int bad_bf = 0, bad_h = 0;
  for (int i = 0; i < 200000; i++) {
    uint32_t u = next_u32();
    float f;
    if (i % 2) { /* values in a moderate range, including f16 subnormals and ties */
      f = ldexpf((float)(next_u32() & 0xffffff) / 16777216.0f, (int)(next_u32() % 40) - 30);
      if (next_u32() & 1) f = -f;
    } else {
      memcpy(&f, &u, 4);
      if (!isfinite(f) || fabsf(f) > 1e30f || fabsf(f) < 1e-30f) continue;
    }
    uint16_t b, h;
    float back;
    lst_convert(&f, LST_F32, &b, LST_BF16, 1);
    lst_convert(&b, LST_BF16, &back, LST_F32, 1);
    if ((double)back != nearest(f, 7, -126)) bad_bf++;
    if (fabsf(f) < 65504.0f) {
      lst_convert(&f, LST_F32, &h, LST_F16, 1);
      lst_convert(&h, LST_F16, &back, LST_F32, 1);
      if ((double)back != nearest(f, 10, -14)) bad_h++;
    }
  }
  ZS_EXPECT(bad_bf == 0, "%d F32 -> BF16 values not rounded to nearest even", bad_bf);
  ZS_EXPECT(bad_h == 0, "%d F32 -> F16 values not rounded to nearest even", bad_h);
  /* specials: NaN stays NaN, overflow becomes infinity, signed zero kept */
  const float sp[] = {NAN, INFINITY, -INFINITY, 1e6f, -0.0f};
  for (int i = 0; i < 5; i++) {
    uint16_t h;
    float back;
    lst_convert(&sp[i], LST_F32, &h, LST_F16, 1);
    lst_convert(&h, LST_F16, &back, LST_F32, 1);
    const float want = i == 3 ? INFINITY : sp[i];
    ZS_EXPECT(isnan(want) ? isnan(back) : (back == want && signbit(back) == signbit(want)),
              "F16 special %d: %g -> %g", i, (double)sp[i], (double)back);
    lst_convert(&sp[i], LST_F32, &h, LST_BF16, 1);
    lst_convert(&h, LST_BF16, &back, LST_F32, 1);
    const double bwant = i == 3 ? nearest(1e6, 7, -126) : sp[i]; /* 1e6 is not a bf16 */
    ZS_EXPECT(isnan(sp[i]) ? isnan(back) : back == bwant, "BF16 special %d", i);
  }
}

/* A small model of arch with every feature it has (RoPE scaling for Llama too). */
static llama_config tiny(llama_arch arch) {
  llama_config c = llama_tiny_config(arch, 50, 64);
  c.rope_theta = 500000.0;
  c.rms_eps = 1e-5;
  if (arch == LLAMA_ARCH_LLAMA) {
    c.rope_llama3 = 1;
    c.rope_factor = 8;
    c.rope_low_freq = 1;
    c.rope_high_freq = 4;
    c.rope_orig_max_pos = 32;
  }
  return c;
}

/* A random value representable in dt (so that writing it in dt is exact). */
static float value_in(lst_dtype dt) {
  if (dt == LST_BF16) return ((float)(next_u32() % 255) - 127.0f) / 32.0f; /* 8 bits */
  float f = ((float)(next_u32() % 2001) - 1000.0f) / 256.0f;               /* 11 bits */
  if (dt == LST_F32) f += (float)(next_u32() % 1000) * 1e-7f;
  return f;
}

/* Every tensor of c (unit order) with random values of dt; owned arrays in vals[k], n in *n. */
static float **make_values(const llama_config *c, lst_dtype dt, int *n) {
  float **v = calloc(256, sizeof *v);
  int k = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    for (int t = 0; t < nt; t++, k++) {
      const int64_t m = d[t].ndim == 2 ? d[t].shape[0] * d[t].shape[1] : d[t].shape[0];
      v[k] = malloc((size_t)m * 4);
      for (int64_t i = 0; i < m; i++)
        v[k][i] = value_in(dt);
    }
  }
  *n = k;
  return v;
}

/* Writes c with values vals in dt to dir; 0 or -1. */
static int write_model(const char *dir, const llama_config *c, float **vals, lst_dtype dt,
                       uint64_t shard) {
  lhw_writer w;
  if (llama_hf_export_open(dir, c, dt, shard, &w)) return -1;
  int k = 0;
  for (int u = 0; u < llama_num_units(c); u++) {
    zs_tensor_desc d[LLAMA_MAX_UNIT_TENSORS];
    const int nt = llama_unit_descs(c, u, d);
    for (int t = 0; t < nt; t++, k++) {
      char name[160];
      llama_hf_name(c, u, t, name, sizeof name);
      if (lhw_put(&w, name, vals[k], LST_F32)) {
        lhw_abort(&w);
        return -1;
      }
    }
  }
  return lhw_close(&w);
}

static void rm_dir(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

static int count_files(const char *dir, const char *suffix) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '%s$'", dir, suffix);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
  }
  return n;
}

static void test_round_trip(const char *base) {
  const lst_dtype dts[] = {LST_F32, LST_F16, LST_BF16};
  for (int a = 0; a < 2; a++) {
    for (int di = 0; di < 3; di++) {
      for (int sharded = 0; sharded < 2; sharded++) {
        const llama_config c = tiny(a ? LLAMA_ARCH_QWEN2 : LLAMA_ARCH_LLAMA);
        const lst_dtype dt = dts[di];
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/rt_%d_%d_%d", base, a, di, sharded);
        mkdir(dir, 0755);
        int n;
        float **vals = make_values(&c, dt, &n);
        const char *what = a ? "qwen2" : "llama";
        ZS_EXPECT(write_model(dir, &c, vals, dt, sharded ? 2000 : 0) == 0, "%s write: %s", what,
                  llama_error());
        const int files = count_files(dir, ".safetensors");
        ZS_EXPECT(sharded ? files > 2 : files == 1, "%s %s: %d files", what,
                  sharded ? "sharded" : "one file", files);
        llama_config r;
        lhf_dir d;
        if (llama_hf_import(dir, 32, &r, &d) != 0) {
          ZS_EXPECT(0, "%s %s import: %s", what, lst_dtype_name(dt), llama_error());
          continue;
        }
        ZS_EXPECT(r.arch == c.arch && r.vocab == c.vocab && r.hidden == c.hidden &&
                      r.intermediate == c.intermediate && r.layers == c.layers &&
                      r.heads == c.heads && r.kv_heads == c.kv_heads && r.head_dim == c.head_dim &&
                      r.max_pos == c.max_pos && r.rope_theta == c.rope_theta &&
                      r.rms_eps == c.rms_eps && r.rope_llama3 == c.rope_llama3 &&
                      r.rope_factor == c.rope_factor && r.rope_low_freq == c.rope_low_freq &&
                      r.rope_high_freq == c.rope_high_freq &&
                      r.rope_orig_max_pos == c.rope_orig_max_pos && r.qkv_bias == c.qkv_bias &&
                      r.tied == c.tied,
                  "%s config.json round trip differs", what);
        ZS_EXPECT(strcmp(r.torch_dtype, dt == LST_F32   ? "float32"
                                        : dt == LST_F16 ? "float16"
                                                        : "bfloat16") == 0,
                  "torch_dtype %s", r.torch_dtype);
        int k = 0, bad = 0;
        for (int u = 0; u < llama_num_units(&c); u++) {
          zs_tensor_desc ds[LLAMA_MAX_UNIT_TENSORS];
          const int nt = llama_unit_descs(&c, u, ds);
          for (int t = 0; t < nt; t++, k++) {
            char name[160];
            llama_hf_name(&c, u, t, name, sizeof name);
            const int i = lhf_find(&d, name);
            const int64_t m = lhf_numel(&d, i);
            float *f = malloc((size_t)m * 4);
            uint16_t *h = malloc((size_t)m * 2), *want = malloc((size_t)m * 2);
            ZS_EXPECT(strcmp(d.t[i].dtype, lst_dtype_name(dt)) == 0, "%s dtype %s", name,
                      d.t[i].dtype);
            ZS_EXPECT(lhf_read(&d, i, f, LST_F32) == 0, "%s: %s", name, llama_error());
            bad += memcmp(f, vals[k], (size_t)m * 4) != 0;
            /* read as the engine's bf16: the bits of the value in bf16 (exact for F16/BF16
               values of this range; for F32 the conversion rounds, compared with lst_convert) */
            ZS_EXPECT(lhf_read(&d, i, h, LST_BF16) == 0, "%s: %s", name, llama_error());
            lst_convert(vals[k], LST_F32, want, LST_BF16, (size_t)m);
            bad += memcmp(h, want, (size_t)m * 2) != 0;
            free(f);
            free(h);
            free(want);
            free(vals[k]);
          }
        }
        ZS_EXPECT(bad == 0, "%s %s%s: %d tensors differ after the round trip", what,
                  lst_dtype_name(dt), sharded ? " sharded" : "", bad);
        lhf_close(&d);
        free(vals);
      }
    }
  }
}

/* The import of dir at seq must fail with a message containing want. */
static void expect_refused(const char *dir, int seq, const char *want, const char *what) {
  llama_config c;
  lhf_dir d;
  const int rc = llama_hf_import(dir, seq, &c, &d);
  ZS_EXPECT(rc == -1 && strstr(llama_error(), want), "%s: rc %d, message \"%s\", want \"%s\"", what,
            rc, llama_error(), want);
  if (rc == 0)
    lhf_close(&d);
  else
    printf("ok   refused (%s): %s\n", what, llama_error());
}

/* Writes model c with random F32 weights into dir (created), then overwrites config.json with
   cfg (the config that the reader will see). */
static void write_mismatch(const char *dir, const llama_config *weights, const llama_config *cfg) {
  mkdir(dir, 0755);
  int n;
  float **vals = make_values(weights, LST_F32, &n);
  ZS_EXPECT(write_model(dir, weights, vals, LST_F32, 3000) == 0, "write: %s", llama_error());
  for (int k = 0; k < n; k++)
    free(vals[k]);
  free(vals);
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", dir);
  ZS_EXPECT(llama_config_write(cfg, path, "float32") == 0, "config: %s", llama_error());
}

static void expect_parse_refused(const char *json, const char *want, const char *what) {
  llama_config c;
  const int rc = llama_config_parse(&c, json, "config.json");
  ZS_EXPECT(rc == -1 && strstr(llama_error(), want), "%s: rc %d, message \"%s\"", what, rc,
            llama_error());
  if (rc) printf("ok   refused (%s): %s\n", what, llama_error());
}

/* A single-file directory whose model.safetensors has header hdr and `data` zero bytes after it;
   opening it must fail with a message containing want. */
static void expect_header_refused(const char *base, const char *hdr, size_t data, const char *want,
                                  const char *what) {
  char dir[4096], path[4200];
  static int n = 0;
  snprintf(dir, sizeof dir, "%s/hdr%d", base, n++);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  FILE *f = fopen(path, "wb");
  const uint64_t hl = strlen(hdr);
  unsigned char *zeros = calloc(data + 1, 1);
  ZS_EXPECT(f && zeros && fwrite(&hl, 8, 1, f) == 1 && fwrite(hdr, 1, hl, f) == hl &&
                fwrite(zeros, 1, data, f) == data,
            "write %s", path);
  if (f) fclose(f);
  free(zeros);
  lhf_dir d;
  const int rc = lhf_open(&d, dir);
  ZS_EXPECT(rc == -1 && strstr(llama_error(), want), "%s: rc %d, message \"%s\", want \"%s\"", what,
            rc, rc ? llama_error() : "", want);
  if (rc) printf("ok   refused (%s): %s\n", what, llama_error());
  lhf_close(&d); /* also after a failure (hf_read.h) */
}

/* Crafted safetensors headers (untrusted input): offsets that are not integers in the data
   section, a shape whose byte count wraps 64 bits, overlapping tensors. */
static void test_bad_headers(const char *base) {
  expect_header_refused(base, "{\"a\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[-1,63]}}",
                        64, "entry a has bad data_offsets", "negative offset");
  expect_header_refused(base,
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,1e400]}}", 64,
                        "entry a has bad data_offsets", "infinite offset");
  expect_header_refused(base,
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,1e19]}}", 64,
                        "entry a has bad data_offsets", "offset beyond 2^63");
  expect_header_refused(base,
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0.5,64.5]}}",
                        65, "entry a has bad data_offsets", "fractional offset");
  /* 2^32 x 2^32 elements wrap to 0 bytes, as the empty range [0, 0] holds */
  expect_header_refused(base,
                        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
                        "\"data_offsets\":[0,0]}}",
                        0, "entry w: its shape's byte count overflows", "numel overflow");
  /* 2^62 elements of 4 bytes wrap to 0 */
  expect_header_refused(base,
                        "{\"w\":{\"dtype\":\"F32\",\"shape\":[2147483648,2147483648],"
                        "\"data_offsets\":[0,0]}}",
                        0, "entry w: its shape's byte count overflows", "bytes overflow");
  expect_header_refused(base,
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[0,64]},"
                        "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
                        "\"b\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[32,96]}}",
                        96, "tensors a and b overlap", "overlapping tensors");
  /* adjacent ranges and an empty tensor are fine */
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/hdr_ok", base);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  const char ok[] = "{\"b\":{\"dtype\":\"F32\",\"shape\":[16],\"data_offsets\":[64,128]},"
                    "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[64,64]},"
                    "\"a\":{\"dtype\":\"F32\",\"shape\":[4,4],\"data_offsets\":[0,64]}}";
  FILE *f = fopen(path, "wb");
  const uint64_t hl = sizeof ok - 1;
  unsigned char zeros[128] = {0};
  ZS_EXPECT(f && fwrite(&hl, 8, 1, f) == 1 && fwrite(ok, 1, hl, f) == hl &&
                fwrite(zeros, 1, 128, f) == 128,
            "write %s", path);
  if (f) fclose(f);
  lhf_dir d;
  ZS_EXPECT(lhf_open(&d, dir) == 0 && d.ntensors == 3, "adjacent tensors: %s", llama_error());
  lhf_close(&d);
}

static void test_refusals(const char *base) {
  char dir[4096], path[4200];
  llama_config c = tiny(LLAMA_ARCH_LLAMA), more = c;
  more.layers = 3;
  snprintf(dir, sizeof dir, "%s/missing", base); /* config: 3 layers, weights: 2 */
  write_mismatch(dir, &c, &more);
  expect_refused(dir, 32, "lack model.layers.2.input_layernorm.weight", "missing tensor");
  snprintf(dir, sizeof dir, "%s/extra", base); /* config: 2 layers, weights: 3 */
  write_mismatch(dir, &more, &c);
  expect_refused(dir, 32, "model.layers.2.", "extra tensor");
  llama_config wide = c;
  wide.intermediate = 32;
  snprintf(dir, sizeof dir, "%s/shape", base);
  write_mismatch(dir, &wide, &c);
  expect_refused(dir, 32,
                 "model.layers.0.mlp.gate_proj.weight has shape [32, 16], but the "
                 "config.json gives [24, 16]",
                 "bad shape");
  llama_config q = tiny(LLAMA_ARCH_QWEN2);
  q.tied = 0;
  snprintf(dir, sizeof dir, "%s/bias", base); /* Qwen2 biases where Llama has none */
  write_mismatch(dir, &q, &q);
  { /* config: llama with q's shape */
    llama_config l = q;
    l.arch = LLAMA_ARCH_LLAMA;
    l.qkv_bias = 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    llama_config_write(&l, path, "float32");
  }
  expect_refused(dir, 32, "self_attn.q_proj.bias", "bias of another architecture");
  /* a truncated shard */
  snprintf(dir, sizeof dir, "%s/trunc", base);
  write_mismatch(dir, &c, &c);
  snprintf(path, sizeof path, "%s/model-00002-of-%05d.safetensors", dir,
           count_files(dir, ".safetensors"));
  ZS_EXPECT(truncate(path, 300) == 0, "truncate %s", path);
  expect_refused(dir, 32, "model-00002", "truncated file");
  /* a dtype the reader does not convert (hand-made single file) */
  snprintf(dir, sizeof dir, "%s/i64", base);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/config.json", dir);
  llama_config_write(&c, path, "float32");
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  const char hdr[] =
      "{\"model.norm.weight\":{\"dtype\":\"I64\",\"shape\":[16],\"data_offsets\":[0,128]}}";
  FILE *f = fopen(path, "wb");
  uint64_t hl = sizeof hdr - 1;
  unsigned char zeros[128] = {0};
  fwrite(&hl, 8, 1, f);
  fwrite(hdr, 1, hl, f);
  fwrite(zeros, 1, 128, f);
  fclose(f);
  lhf_dir d;
  ZS_EXPECT(lhf_open(&d, dir) == 0, "open: %s", llama_error());
  float out[16];
  ZS_EXPECT(lhf_read(&d, 0, out, LST_F32) == -1 && strstr(llama_error(), "dtype I64"),
            "I64 read: %s", llama_error());
  lhf_close(&d);
  /* no weights at all */
  snprintf(dir, sizeof dir, "%s/empty", base);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/config.json", dir);
  llama_config_write(&c, path, "float32");
  expect_refused(dir, 32, "neither model.safetensors nor", "no weights");
  /* tensors out of order */
  {
    lhw_writer w;
    snprintf(dir, sizeof dir, "%s/order", base);
    mkdir(dir, 0755);
    ZS_EXPECT(llama_hf_export_open(dir, &c, LST_F32, 0, &w) == 0, "%s", llama_error());
    float z[800] = {0};
    ZS_EXPECT(lhw_put(&w, "model.norm.weight", z, LST_F32) == -1 &&
                  strstr(llama_error(), "next planned one is model.embed_tokens.weight"),
              "out of order: %s", llama_error());
    ZS_EXPECT(lhw_close(&w) == -1 && strstr(llama_error(), "ended before"), "early close: %s",
              llama_error());
  }
  /* an export into a directory with an earlier export's weights: refused, nothing written */
  {
    lhw_writer w;
    snprintf(dir, sizeof dir, "%s/rt_0_0_1", base); /* the sharded Llama F32 round trip */
    snprintf(path, sizeof path, "%s/config.json", dir);
    struct stat before, after;
    ZS_EXPECT(stat(path, &before) == 0, "stat %s", path);
    llama_config other = c;
    other.layers = 1; /* fewer shards than the old export: old files would stay */
    ZS_EXPECT(llama_hf_export_open(dir, &other, LST_F32, 2000, &w) == -1 &&
                  strstr(llama_error(), "already holds model") &&
                  strstr(llama_error(), "remove them or export to another directory"),
              "export over an old one: %s", llama_error());
    ZS_EXPECT(stat(path, &after) == 0 && after.st_size == before.st_size &&
                  after.st_mtime == before.st_mtime,
              "the refused export rewrote config.json");
    printf("ok   refused (export over an earlier one): %s\n", llama_error());
    snprintf(dir, sizeof dir, "%s/index_only", base); /* a stale index alone */
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    FILE *ix = fopen(path, "w");
    if (ix) fclose(ix);
    ZS_EXPECT(llama_hf_export_check(dir) == -1 &&
                  strstr(llama_error(), "model.safetensors.index.json"),
              "stale index: %s", llama_error());
    snprintf(dir, sizeof dir, "%s/empty", base); /* config.json only: fine */
    ZS_EXPECT(llama_hf_export_check(dir) == 0, "config.json only: %s", llama_error());
  }
  /* config.json: what the example does not train */
  expect_parse_refused("{\"model_type\": \"gpt2\", \"n_embd\": 768}", "model_type \"gpt2\"",
                       "model_type");
  expect_parse_refused("{\"model_type\": \"llama\", \"num_local_experts\": 8}",
                       "mixture of experts", "MoE");
  expect_parse_refused("{\"model_type\": \"llama\", \"attention_bias\": true}", "attention_bias",
                       "attention bias on o");
  expect_parse_refused("{\"model_type\": \"llama\", \"hidden_act\": \"gelu\"}", "hidden_act",
                       "activation");
  expect_parse_refused("{\"model_type\": \"llama\", \"rope_scaling\": {\"type\": \"yarn\", "
                       "\"factor\": 4}}",
                       "rope_scaling type \"yarn\"", "rope scaling");
  expect_parse_refused("{\"model_type\": \"llama\", \"hidden_size\": 1.5}", "hidden_size",
                       "non-integer size");
  /* sliding window: refused only when shorter than the sequence */
  llama_config m;
  ZS_EXPECT(llama_config_parse(&m,
                               "{\"model_type\": \"mistral\", \"hidden_size\": 64, "
                               "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                               "\"sliding_window\": 16}",
                               "m") == 0,
            "%s", llama_error());
  ZS_EXPECT(m.head_dim == 16 && m.kv_heads == 2 && m.sliding_window == 16, "mistral fields");
  ZS_EXPECT(llama_config_check(&m, 16) == 0, "window 16, seq 16: %s", llama_error());
  ZS_EXPECT(llama_config_check(&m, 17) == -1 && strstr(llama_error(), "sliding window (16"),
            "window 16, seq 17: %s", llama_error());
  ZS_EXPECT(
      llama_config_parse(&m, "{\"model_type\": \"mistral\", \"sliding_window\": null}", "m") == 0 &&
          m.sliding_window == 0 && llama_config_check(&m, 4096) == 0,
      "null window: %s", llama_error());
  ZS_EXPECT(llama_config_parse(&m,
                               "{\"model_type\": \"qwen2\", \"sliding_window\": 8, "
                               "\"use_sliding_window\": false, \"hidden_size\": 64, "
                               "\"num_attention_heads\": 4}",
                               "q") == 0 &&
                m.sliding_window == 0 && m.qkv_bias == 1,
            "qwen2 window off: %s", llama_error());
  /* token ids as real configs give them: Llama 3.1's list of eos ids, bos 0, null */
  ZS_EXPECT(llama_config_parse(&m,
                               "{\"model_type\": \"llama\", \"bos_token_id\": 128000, "
                               "\"eos_token_id\": [128001, 128008, 128009]}",
                               "l31") == 0 &&
                m.bos_id == 128000 && m.eos_id == 128001,
            "eos list: %s (bos %d eos %d)", llama_error(), m.bos_id, m.eos_id);
  ZS_EXPECT(llama_config_parse(&m,
                               "{\"model_type\": \"llama\", \"bos_token_id\": 0, "
                               "\"eos_token_id\": null}",
                               "b0") == 0 &&
                m.bos_id == 0 && m.eos_id == -1,
            "bos 0, eos null: %s (bos %d eos %d)", llama_error(), m.bos_id, m.eos_id);
  ZS_EXPECT(llama_config_parse(&m, "{\"model_type\": \"llama\", \"eos_token_id\": []}", "e") == 0 &&
                m.eos_id == -1,
            "empty eos list: %s", llama_error());
  expect_parse_refused("{\"model_type\": \"llama\", \"eos_token_id\": [1, -2]}",
                       "\"eos_token_id\" must be null, an integer >= 0 or a list", "negative eos");
  expect_parse_refused("{\"model_type\": \"llama\", \"bos_token_id\": \"<s>\"}",
                       "\"bos_token_id\" must be null", "string bos");
  ZS_EXPECT(llama_config_parse(&m,
                               "{\"model_type\": \"llama\", \"num_attention_heads\": 32, "
                               "\"num_key_value_heads\": 5}",
                               "g") == 0 &&
                llama_config_check(&m, 16) == -1 && strstr(llama_error(), "do not divide"),
            "kv heads: %s", llama_error());
}

/* A Llama 3.1 style config.json loaded and written back: eos_token_id stays [2, 5, 7], fields the
   example does not read come through unchanged, the ones it writes are its own. */
static void test_config_carry(const char *base) {
  char src[4200], out[4200];
  snprintf(src, sizeof src, "%s/carry_src.json", base);
  snprintf(out, sizeof out, "%s/carry_out.json", base);
  FILE *f = fopen(src, "w");
  ZS_EXPECT(f != NULL, "cannot write %s", src);
  if (!f) return;
  fputs("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
        "\"bos_token_id\": 1, \"eos_token_id\": [2, 5, 7], \"pad_token_id\": 0, "
        "\"my_extra\": {\"a\": [1, \"x\"]}, \"transformers_version\": \"4.45.0\", "
        "\"torch_dtype\": \"bfloat16\"}",
        f);
  fclose(f);
  llama_config c;
  ZS_EXPECT(llama_config_load(&c, src) == 0 && c.eos_id == 2, "load: %s", llama_error());
  ZS_EXPECT(llama_config_write(&c, out, "float32") == 0, "write: %s", llama_error());
  f = fopen(out, "rb");
  char text[8192] = {0};
  if (f) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
  }
  cJSON *o = cJSON_Parse(text);
  const cJSON *eos = cJSON_GetObjectItemCaseSensitive(o, "eos_token_id");
  ZS_EXPECT(cJSON_IsArray(eos) && cJSON_GetArraySize(eos) == 3 &&
                cJSON_GetArrayItem(eos, 0)->valueint == 2 &&
                cJSON_GetArrayItem(eos, 1)->valueint == 5 &&
                cJSON_GetArrayItem(eos, 2)->valueint == 7,
            "eos_token_id [2, 5, 7] kept as a list: %s", text);
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(o, "my_extra");
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(extra, "a");
  ZS_EXPECT(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 2 &&
                cJSON_IsString(cJSON_GetArrayItem(arr, 1)),
            "unknown nested field carried: %s", text);
  const cJSON *pad = cJSON_GetObjectItemCaseSensitive(o, "pad_token_id");
  const cJSON *tv = cJSON_GetObjectItemCaseSensitive(o, "transformers_version");
  ZS_EXPECT(cJSON_IsNumber(pad) && pad->valueint == 0 && cJSON_IsString(tv) &&
                !strcmp(tv->valuestring, "4.45.0"),
            "pad_token_id and transformers_version carried: %s", text);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "torch_dtype");
  const cJSON *hs = cJSON_GetObjectItemCaseSensitive(o, "hidden_size");
  ZS_EXPECT(cJSON_IsString(dt) && !strcmp(dt->valuestring, "float32") && cJSON_IsNumber(hs) &&
                hs->valueint == 64,
            "the fields the example writes are its own: %s", text);
  cJSON_Delete(o);
  llama_config back;
  ZS_EXPECT(llama_config_load(&back, out) == 0 && back.hidden == 64 && back.eos_id == 2 &&
                back.bos_id == 1,
            "the written config reads back: %s", llama_error());
}

int main(void) {
  char base[] = "/tmp/zs_llama_io_XXXXXX";
  if (!mkdtemp(base)) {
    perror("mkdtemp");
    return 1;
  }
  test_convert();
  test_round_trip(base);
  test_refusals(base);
  test_bad_headers(base);
  test_config_carry(base);
  rm_dir(base);
  ZS_TEST_END("llama_io");
}
