/* Frozen units (zs_unit_freeze), at stages 0-3 on 1-4 ranks (mpirun), on the synthetic model of
 * engine_model.h with "embed" and "block" frozen. Each check has a reference that does not run
 * the frozen code path:
 *  - the trainable units' params after many steps (with clipping on) equal, bit for bit, those
 *    of a run where nothing is frozen, the would-be-frozen units get zero gradients and no weight
 *    decay (AdamW then leaves them as they are: m = v = 0, upd = 0);
 *  - the frozen units' params are bit-unchanged after the steps;
 *  - each step's grad_norm equals a float64 norm over the trainable units' mean gradients, and
 *    not the one over every unit;
 *  - memory: no gradient or optimizer byte for the frozen units: the ledger equals
 *    zs_engine_plan_memory and zs_plan_model_frozen, and grads + optimizer shrink by exactly the
 *    frozen units' share against the unfrozen run;
 *  - zs_unit_grad refuses a frozen unit, zs_unit_freeze after commit is refused;
 *  - the safetensors export holds the frozen tensors' values.
 * With --save DIR --dump FILE (run with frozen units, then save, then rank 0 dumps every value)
 * and --load DIR --compare FILE [--trainable] (an engine frozen or not loads and compares;
 * trainable, the units saved frozen must read zero moments after it, whatever they held), the
 * script frozen_ckpt.sh checks checkpoints across world sizes and stages. --master (fp32 params
 * are the master, ZS_MASTER_PARAMS), --lean (with --bf16: the bf16 params are the master,
 * ZS_MASTER_LEAN) and --m16 (bf16 Adam moments) run any of it in a precision mode: a frozen unit
 * has no master, m or v in any, and its params are never updated. */
#include <stdint.h>
#include <string.h>

#include "engine_model.h"
#include "zs_test.h"

#define STEPS 8
#define MICRO 2

static int is_frozen_unit(int u) {
  return u == 0 || u == 2; /* "embed" and "block" */
}

static uint16_t to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

typedef struct {
  int stage, bf16, freeze, world, rank;
  int nowd_frozen; /* the reference run: the would-be-frozen units have no weight decay */
  int master, m16; /* zs_config.master (ZS_MASTER_PARAMS, ZS_MASTER_LEAN), moment_dtype = ZS_BF16 */
} run_cfg;

static zs_engine *make(zs_comm *comm, const run_cfg *rc, zs_unit **units) {
  zs_config c;
  zs_config_default(&c);
  c.stage = rc->stage;
  c.deterministic = 1;
  c.param_dtype = c.reduce_dtype = rc->bf16 ? ZS_BF16 : ZS_F32;
  c.adamw.lr = 0.05f;
  c.adamw.weight_decay = 0.1f;
  c.adamw.max_grad_norm = 0.5f; /* clips: the norm decides every update's scale */
  c.prefetch_units = 1;
  if (rc->master) c.master = rc->master;
  if (rc->m16) c.moment_dtype = ZS_BF16;
  zs_engine *e;
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  for (int u = 0; u < TM_NUNITS; u++) {
    zs_tensor_desc t[TM_MAXT];
    memcpy(t, tm_units[u].t, sizeof t);
    if (rc->nowd_frozen && is_frozen_unit(u))
      for (int k = 0; k < tm_units[u].ntensors; k++)
        t[k].no_weight_decay = 1;
    ZS_OK_OR_DIE(zs_engine_add_unit(e, tm_units[u].name, tm_units[u].ntensors, t, &units[u]));
    if (rc->freeze && is_frozen_unit(u)) ZS_OK_OR_DIE(zs_unit_freeze(units[u], 1));
  }
  ZS_OK_OR_DIE(zs_engine_commit(e));
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++) {
      const int64_t n = tm_numel(u, k), b = tm_base(u, k);
      float *v = malloc(sizeof(float) * (size_t)n);
      for (int64_t i = 0; i < n; i++) /* bf16-exact with bf16 params: a frozen unit keeps the
                                         rounded value, a master the exact one */
        v[i] = rc->bf16 ? from_bf16(to_bf16(tm_init(b + i))) : tm_init(b + i);
      ZS_OK_OR_DIE(zs_unit_set_param(units[u], k, v));
      free(v);
    }
  return e;
}

static float param_at(const void *p, int64_t i, int bf16) {
  return bf16 ? from_bf16(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* One step of MICRO micro-batches; global micro-batch m * world + rank of step s. The units whose
   gradient the caller skips get none (frozen: zs_unit_grad is refused; reference: zero). *ref and
   *ref_all get the float64 norms of the mean gradient over the trainable units and over all. */
static float step(zs_engine *e, zs_unit **units, const run_cfg *rc, int s, double *ref,
                  double *ref_all) {
  const int64_t total = tm_total();
  double *sum = calloc((size_t)total, sizeof *sum);
  float *pv = calloc((size_t)total, sizeof *pv);
  ZS_OK_OR_DIE(zs_engine_begin_step(e, MICRO));
  for (int m = 0; m < MICRO; m++) {
    for (int u = 0; u < TM_NUNITS; u++) { /* forward: read the params */
      ZS_OK_OR_DIE(zs_unit_gather(units[u]));
      /* The forward of every micro-step prefetches the next unit, frozen or not (a frozen unit's
         grads_ready count never moves: its gathers must not look like the backward's). */
      ZS_EXPECT(u + 1 == TM_NUNITS || zs_unit_is_gathered(units[u + 1]),
                "micro-step %d: the gather of %s did not prefetch the next unit", m,
                tm_units[u].name);
      for (int k = 0; k < tm_units[u].ntensors; k++) {
        const void *p = zs_unit_param(units[u], k);
        for (int64_t i = 0; i < tm_numel(u, k); i++)
          pv[tm_base(u, k) + i] = param_at(p, i, rc->bf16);
      }
      ZS_OK_OR_DIE(zs_unit_release(units[u]));
    }
    for (int u = TM_NUNITS - 1; u >= 0; u--) { /* backward */
      ZS_OK_OR_DIE(zs_unit_gather(units[u]));
      for (int k = 0; k < tm_units[u].ntensors; k++) {
        void *g = NULL;
        if (rc->freeze && is_frozen_unit(u)) {
          ZS_EXPECT(zs_unit_grad(units[u], k) == NULL && strstr(zs_last_error(), "frozen"),
                    "zs_unit_grad of frozen unit %s must be refused", tm_units[u].name);
        } else {
          g = zs_unit_grad(units[u], k);
          ZS_EXPECT(g != NULL, "zs_unit_grad: %s", zs_last_error());
        }
        for (int64_t i = 0; i < tm_numel(u, k); i++) {
          const int64_t gi = tm_base(u, k) + i;
          for (int r = 0; r < rc->world; r++) { /* every rank's micro-batch, for the reference */
            const int64_t b = (int64_t)s * rc->world * MICRO + (int64_t)m * rc->world + r;
            const float gv = tm_a(b, gi) * (pv[gi] - tm_t(b, gi));
            sum[gi] += gv;
            if (r == rc->rank && g && !is_frozen_unit(u)) {
              if (rc->bf16)
                ((uint16_t *)g)[i] = to_bf16(from_bf16(((uint16_t *)g)[i]) + gv);
              else
                ((float *)g)[i] += gv;
            }
          }
        }
      }
      ZS_OK_OR_DIE(zs_unit_release(units[u]));
      ZS_OK_OR_DIE(zs_unit_grads_ready(units[u])); /* a no-op on a frozen unit */
    }
  }
  zs_step_stats st;
  ZS_OK_OR_DIE(zs_engine_step(e, &st));
  double sq = 0, sq_all = 0;
  const double inv = 1.0 / ((double)rc->world * MICRO);
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++)
      for (int64_t i = 0; i < tm_numel(u, k); i++) {
        const double g = sum[tm_base(u, k) + i] * inv;
        sq_all += g * g;
        if (!is_frozen_unit(u)) sq += g * g;
      }
  *ref = sqrt(sq);
  *ref_all = sqrt(sq_all);
  free(sum);
  free(pv);
  return st.grad_norm;
}

/* Every value of the model, in global order (collective: zs_unit_get_param). */
static float *read_all(zs_unit **units) {
  float *v = malloc(sizeof(float) * (size_t)tm_total());
  for (int u = 0; u < TM_NUNITS; u++)
    for (int k = 0; k < tm_units[u].ntensors; k++)
      ZS_OK_OR_DIE(zs_unit_get_param(units[u], k, v + tm_base(u, k)));
  return v;
}

/* The export holds the frozen tensor embed.w: its fp32 values equal want. */
static void check_export(const char *path, const float *want) {
  FILE *f = fopen(path, "rb");
  ZS_EXPECT(f != NULL, "export %s missing", path);
  if (!f) return;
  uint64_t hl = 0;
  ZS_EXPECT(fread(&hl, 8, 1, f) == 1 && hl < 65536, "export header");
  char *h = calloc(hl + 1, 1);
  ZS_EXPECT(fread(h, 1, hl, f) == hl, "export header text");
  const char *at = strstr(h, "\"embed.w\"");
  unsigned long long a = 0, b = 0;
  const char *off = at ? strstr(at, "\"data_offsets\"") : NULL;
  ZS_EXPECT(off && sscanf(off, "\"data_offsets\":[%llu,%llu]", &a, &b) == 2,
            "embed.w in the export: %s", h);
  if (off && b - a == 4 * (unsigned long long)tm_numel(0, 0)) {
    float *v = malloc(b - a);
    fseek(f, (long)(8 + hl + a), SEEK_SET);
    ZS_EXPECT(fread(v, 1, b - a, f) == b - a, "export data");
    ZS_EXPECT(memcmp(v, want, b - a) == 0, "frozen embed.w exported with other values");
    free(v);
  }
  free(h);
  fclose(f);
}

static void check_stage(zs_comm *comm, int stage, int bf16, int master, int m16) {
  const int world = zs_comm_size(comm), rank = zs_comm_rank(comm);
  run_cfg fa = {stage, bf16, 1, world, rank, 0, master, m16},
          fb = {stage, bf16, 0, world, rank, 1, master, m16};
  zs_unit *ua[TM_NUNITS], *ub[TM_NUNITS];
  zs_engine *a = make(comm, &fa, ua);
  zs_engine *b = make(comm, &fb, ub);
  ZS_EXPECT_STATUS(zs_unit_freeze(ua[1], 1), ZS_ERR_STATE);
  ZS_EXPECT(zs_unit_is_frozen(ua[0]) && !zs_unit_is_frozen(ua[1]) && !zs_unit_is_frozen(ub[0]),
            "zs_unit_is_frozen");
  float *init = read_all(ua);
  /* Memory: the ledger is the plan, and the frozen units cost no gradient or optimizer byte. */
  zs_memory ma, mb, pa;
  ZS_OK_OR_DIE(zs_engine_memory(a, &ma));
  ZS_OK_OR_DIE(zs_engine_memory(b, &mb));
  ZS_OK_OR_DIE(zs_engine_plan_memory(a, &pa));
  ZS_EXPECT(ma.params.cur == pa.params.cur && ma.grads.cur == pa.grads.cur &&
                ma.optimizer.cur == pa.optimizer.cur && ma.host_pinned.cur == pa.host_pinned.cur,
            "stage %d: ledger %zu/%zu/%zu != plan %zu/%zu/%zu", stage, ma.params.cur, ma.grads.cur,
            ma.optimizer.cur, pa.params.cur, pa.grads.cur, pa.optimizer.cur);
  int64_t numel[TM_NUNITS];
  int frozen[TM_NUNITS];
  size_t frozen_padded = 0, trainable_padded = 0;
  const size_t S = stage >= 1 ? (size_t)world : 1;
  for (int u = 0; u < TM_NUNITS; u++) {
    numel[u] = 0;
    for (int k = 0; k < tm_units[u].ntensors; k++)
      numel[u] += tm_numel(u, k);
    frozen[u] = is_frozen_unit(u);
    const size_t P = ((size_t)numel[u] + S - 1) / S * S;
    if (frozen[u])
      frozen_padded += P;
    else
      trainable_padded += P;
  }
  zs_plan_report rep;
  ZS_OK_OR_DIE(zs_plan_model_frozen(zs_engine_config(a), world, numel, frozen, TM_NUNITS, 0,
                                    SIZE_MAX, SIZE_MAX, &rep));
  ZS_EXPECT(rep.params == ma.params.cur && rep.grads == ma.grads.cur &&
                rep.optimizer == ma.optimizer.cur,
            "stage %d: zs_plan_model_frozen %zu/%zu/%zu != ledger", stage, rep.params, rep.grads,
            rep.optimizer);
  /* The optimizer (master, m, v: 12 bytes; 8 when the params are the master; 4 fewer with bf16
     moments) and the gradients cover the trainable units only. */
  const size_t ob = (master ? 0 : 4) + (m16 ? 4 : 8);
  const size_t ps = bf16 ? 2 : 4, shard_o = stage >= 1 ? S : 1, shard_g = stage >= 2 ? S : 1;
  ZS_EXPECT(ma.optimizer.cur == ob * trainable_padded / shard_o,
            "stage %d: optimizer %zu bytes, want %zu", stage, ma.optimizer.cur,
            ob * trainable_padded / shard_o);
  ZS_EXPECT(mb.optimizer.cur - ma.optimizer.cur == ob * frozen_padded / shard_o,
            "stage %d: freezing saved %zu optimizer bytes", stage,
            mb.optimizer.cur - ma.optimizer.cur);
  ZS_EXPECT(mb.grads.cur - ma.grads.cur == ps * frozen_padded / shard_g,
            "stage %d: freezing saved %zu gradient bytes", stage, mb.grads.cur - ma.grads.cur);
  ZS_EXPECT(ma.params.cur == mb.params.cur, "stage %d: params differ", stage);
  for (int s = 0; s < STEPS; s++) {
    double ra, ra_all, rb, rb_all;
    const float na = step(a, ua, &fa, s, &ra, &ra_all);
    const float nb = step(b, ub, &fb, s, &rb, &rb_all);
    ZS_EXPECT(memcmp(&na, &nb, 4) == 0, "stage %d step %d: norm %.9g vs reference run %.9g", stage,
              s, (double)na, (double)nb);
    ZS_EXPECT(fabs(na - ra) <= (bf16 ? 2e-2 : 1e-5) * ra,
              "stage %d step %d: grad_norm %.9g, float64 over trainable units %.9g (over all %.9g)",
              stage, s, (double)na, ra, ra_all);
    ZS_EXPECT(fabs(ra_all - ra) > 1e-3 * ra, "the reference must tell the norms apart");
  }
  float *va = read_all(ua), *vb = read_all(ub);
  for (int u = 0; u < TM_NUNITS; u++) {
    const size_t off = (size_t)tm_base(u, 0), n = (size_t)numel[u];
    if (is_frozen_unit(u)) {
      ZS_EXPECT(memcmp(va + off, init + off, n * 4) == 0, "stage %d: frozen unit %s changed", stage,
                tm_units[u].name);
      ZS_EXPECT(memcmp(vb + off, init + off, n * 4) == 0,
                "stage %d: reference unit %s changed (zero gradient, no decay)", stage,
                tm_units[u].name);
    } else {
      ZS_EXPECT(memcmp(va + off, vb + off, n * 4) == 0,
                "stage %d: trainable unit %s differs from the reference run", stage,
                tm_units[u].name);
      ZS_EXPECT(memcmp(va + off, init + off, n * 4) != 0, "stage %d: unit %s did not train", stage,
                tm_units[u].name);
    }
  }
  char path[256];
  snprintf(path, sizeof path, "frozen_export_%d_np%d_%d.safetensors", stage, world, bf16);
  ZS_OK_OR_DIE(zs_engine_export_safetensors(a, path));
  if (rank == 0) {
    check_export(path, init + tm_base(0, 0));
    remove(path);
  }
  free(init);
  free(va);
  free(vb);
  zs_engine_destroy(b);
  zs_engine_destroy(a);
}

int main(int argc, char **argv) {
  zs_comm *comm;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const char *save = NULL, *load = NULL, *dump = NULL, *cmp = NULL;
  int stage = -1, bf16 = 0, trainable = 0, master = 0, m16 = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--stage") && i + 1 < argc) stage = atoi(argv[++i]);
    if (!strcmp(argv[i], "--bf16")) bf16 = 1;
    if (!strcmp(argv[i], "--trainable")) trainable = 1;
    if (!strcmp(argv[i], "--master")) master = ZS_MASTER_PARAMS;
    if (!strcmp(argv[i], "--lean")) master = ZS_MASTER_LEAN;
    if (!strcmp(argv[i], "--m16")) m16 = 1;
    if (!strcmp(argv[i], "--save") && i + 1 < argc) save = argv[++i];
    if (!strcmp(argv[i], "--load") && i + 1 < argc) load = argv[++i];
    if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
    if (!strcmp(argv[i], "--compare") && i + 1 < argc) cmp = argv[++i];
  }
  const int world = zs_comm_size(comm), rank = zs_comm_rank(comm);
  if (save || load) {
    run_cfg rc = {stage < 0 ? 3 : stage, bf16, !trainable, world, rank, 0, master, m16};
    zs_unit *u[TM_NUNITS];
    zs_engine *e = make(comm, &rc, u);
    if (save) {
      /* Values the loading engine does not start from (make() sets tm_init), frozen units too:
         a load that leaves any unit alone is caught. */
      for (int ui = 0; ui < TM_NUNITS; ui++)
        for (int k = 0; k < tm_units[ui].ntensors; k++) {
          const int64_t n = tm_numel(ui, k), b = tm_base(ui, k) + 7919;
          float *v = malloc(sizeof(float) * (size_t)n);
          for (int64_t i = 0; i < n; i++)
            v[i] = bf16 ? from_bf16(to_bf16(tm_init(b + i))) : tm_init(b + i);
          ZS_OK_OR_DIE(zs_unit_set_param(u[ui], k, v));
          free(v);
        }
      for (int s = 0; s < 3; s++) {
        double r, ra;
        step(e, u, &rc, s, &r, &ra);
      }
      ZS_OK_OR_DIE(zs_test_save(e, save));
      float *v = read_all(u);
      if (rank == 0 && dump) {
        FILE *f = fopen(dump, "wb");
        ZS_EXPECT(f && fwrite(v, 4, (size_t)tm_total(), f) == (size_t)tm_total(), "dump");
        if (f) fclose(f);
      }
      free(v);
    } else {
      /* Trainable, the units saved frozen get moments before the load: their files hold none,
         so the load must set them to zeros. */
      for (int pass = 0; trainable && pass < 2; pass++) {
        if (pass) ZS_OK_OR_DIE(zs_engine_load(e, load));
        for (int ui = 0; ui < TM_NUNITS; ui++)
          for (int k = 0; is_frozen_unit(ui) && k < tm_units[ui].ntensors; k++)
            for (int a = 0; a < 2; a++) {
              const char *name = a ? "exp_avg_sq" : "exp_avg";
              float *s = malloc(sizeof(float) * (size_t)tm_numel(ui, k) + 4);
              for (int64_t i = 0; !pass && i < tm_numel(ui, k); i++)
                s[i] = 0.5f;
              if (!pass) {
                ZS_OK_OR_DIE(zs_unit_set_state(u[ui], k, name, s));
                free(s);
                continue;
              }
              ZS_OK_OR_DIE(zs_unit_get_state(u[ui], k, name, s));
              for (int64_t i = 0; i < tm_numel(ui, k); i++)
                ZS_EXPECT(s[i] == 0, "unit %s tensor %d %s[%lld] is %g after the load, not 0",
                          tm_units[ui].name, k, name, (long long)i, (double)s[i]);
              free(s);
            }
      }
      if (!trainable) ZS_OK_OR_DIE(zs_engine_load(e, load));
      float *v = read_all(u), *w = malloc(sizeof(float) * (size_t)tm_total());
      FILE *f = fopen(cmp, "rb");
      ZS_EXPECT(f && fread(w, 4, (size_t)tm_total(), f) == (size_t)tm_total(), "read %s", cmp);
      if (f) fclose(f);
      /* Lean mode holds the loaded master in its bf16 params: rounded to nearest even. */
      for (int64_t i = 0; master == ZS_MASTER_LEAN && i < tm_total(); i++)
        w[i] = from_bf16(to_bf16(w[i]));
      for (int ui = 0; ui < TM_NUNITS; ui++)
        ZS_EXPECT(memcmp(v + tm_base(ui, 0), w + tm_base(ui, 0),
                         4 * (size_t)(tm_base(ui, tm_units[ui].ntensors - 1) +
                                      tm_numel(ui, tm_units[ui].ntensors - 1) - tm_base(ui, 0))) ==
                      0,
                  "unit %s loaded other values", tm_units[ui].name);
      double r, ra; /* and it trains on */
      step(e, u, &rc, 3, &r, &ra);
      free(v);
      free(w);
    }
    zs_engine_destroy(e);
  } else {
    for (int s = 0; s <= 3; s++)
      if (stage < 0 || stage == s) check_stage(comm, s, bf16, master, m16);
  }
  zs_comm_destroy(comm);
  ZS_TEST_END("test_engine_frozen");
}
