/* Lookup by name and the whole-model zs_engine_set_params / zs_engine_get_params, at stages 0-3
 * on 1-4 ranks (mpirun), for a model kept llm.c-style: one host array per parameter type across
 * all layers. Checks, each against an independent reference:
 *  - values written through the callback read back bit for bit (the source arrays are the
 *    reference), by zs_engine_get_params and by per-tensor zs_unit_get_param;
 *  - an engine loaded per tensor with zs_unit_set_param holds the same bits, before and after a
 *    training step with the same gradients (so master and compute copy were both written);
 *  - stage 3: reading gathers no param copy (the memory rule);
 *  - unknown unit and tensor names are refused naming the unit and the name; a callback's
 *    refusal writes nothing; NULL (skipped) tensors are left alone; call order is checked. */
#include <stdint.h>
#include <string.h>

#include "zs_test.h"

#define L 3
#define C 7
#define V 37
#define T 5

/* The program's own layout (llm.c's ParameterTensors, shortened). */
typedef struct {
  float *wte, *wpe, *ln1w, *qkvw, *qkvb, *fcw, *lnfw, *lnfb;
} params;
enum { NTYPES = 8 };
static const int64_t type_numel[NTYPES] = {V * C,     T *C,         L *C, L * 3 * C *C,
                                           L * 3 * C, L * 4 * C *C, C,    C};

static float **slot(params *p, int k) {
  float **s[NTYPES] = {&p->wte, &p->wpe, &p->ln1w, &p->qkvw, &p->qkvb, &p->fcw, &p->lnfw, &p->lnfb};
  return s[k];
}

/* Rank-independent values: a hash of (type, index, salt) spread over a few binades. */
static float value(int type, int64_t i, int salt) {
  uint64_t x = (uint64_t)type * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull +
               (uint64_t)salt * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd39ull;
  x ^= x >> 29;
  return (float)(((double)(x >> 11) / 9007199254740992.0 - 0.5) * ldexp(1.0, (int)(x % 5) - 2));
}

static void alloc_params(params *p, int salt) {
  for (int k = 0; k < NTYPES; k++) {
    *slot(p, k) = malloc(sizeof(float) * (size_t)type_numel[k]);
    for (int64_t i = 0; i < type_numel[k]; i++)
      (*slot(p, k))[i] = salt < 0 ? 0.0f : value(k, i, salt);
  }
}

static void free_params(params *p) {
  for (int k = 0; k < NTYPES; k++)
    free(*slot(p, k));
}

/* Unit 0 "embed" (wte, wpe), units 1..L "h<l>" (ln1w, qkvw, qkvb, fcw), unit L+1 "lnf" (w, b). */
static const zs_tensor_desc embed_t[2] = {{"wte", 2, {V, C}, 1}, {"wpe", 2, {T, C}, 1}};
static const zs_tensor_desc block_t[4] = {{"ln1w", 1, {C}, 1},
                                          {"qkvw", 2, {3 * C, C}, 0},
                                          {"qkvb", 1, {3 * C}, 1},
                                          {"fcw", 2, {4 * C, C}, 0}};
static const zs_tensor_desc lnf_t[2] = {{"w", 1, {C}, 1}, {"b", 1, {C}, 1}};

/* What the locate callback sees: the arrays, and optional refusal / skip rules. */
typedef struct {
  params *p;
  const char *refuse_unit, *refuse_tensor; /* refuse this one */
  int only_lnf_b;                          /* skip everything but lnf.b */
  int calls;
} locator;

/* Maps (unit, tensor name) to the per-type array: layer l's slice of a block type. */
static int locate(void *user, const zs_unit *u, int ui, int t, const char *name, int64_t numel,
                  float **host) {
  locator *lc = user;
  lc->calls++;
  (void)t;
  if (lc->refuse_unit && !strcmp(zs_unit_name(u), lc->refuse_unit) &&
      !strcmp(name, lc->refuse_tensor))
    return 7;
  *host = NULL;
  if (lc->only_lnf_b && !(ui == L + 1 && !strcmp(name, "b"))) return 0;
  params *p = lc->p;
  if (ui == 0) *host = !strcmp(name, "wte") ? p->wte : p->wpe;
  if (ui == L + 1) *host = !strcmp(name, "w") ? p->lnfw : p->lnfb;
  if (ui >= 1 && ui <= L) {
    const int l = ui - 1;
    float *base = !strcmp(name, "ln1w")   ? p->ln1w
                  : !strcmp(name, "qkvw") ? p->qkvw
                  : !strcmp(name, "qkvb") ? p->qkvb
                                          : p->fcw;
    *host = base + (int64_t)l * numel;
  }
  return 0;
}

static zs_engine *make_engine(zs_comm *comm, int stage, zs_unit **u) {
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.deterministic = 1;
  cfg.comm_timeout_s = 60;
  cfg.adamw.lr = 0.01f;
  zs_engine *e = NULL;
  ZS_OK_OR_DIE(zs_engine_create(&cfg, comm, &e));
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "embed", 2, embed_t, &u[0]));
  for (int l = 0; l < L; l++) {
    char nm[16];
    snprintf(nm, sizeof nm, "h%d", l);
    ZS_OK_OR_DIE(zs_engine_add_unit(e, nm, 4, block_t, &u[1 + l]));
  }
  ZS_OK_OR_DIE(zs_engine_add_unit(e, "lnf", 2, lnf_t, &u[L + 1]));
  return e;
}

/* Every element of every type equal, bit for bit. */
static int same(const params *a, const params *b) {
  params *pa = (params *)a, *pb = (params *)b;
  for (int k = 0; k < NTYPES; k++)
    if (memcmp(*slot(pa, k), *slot(pb, k), sizeof(float) * (size_t)type_numel[k])) return 0;
  return 1;
}

/* The per-tensor path: zs_unit_set_param / zs_unit_get_param through the same mapping. */
static void per_tensor(zs_engine *e, params *p, int set) {
  locator lc = {p, NULL, NULL, 0, 0};
  for (int i = 0; i < zs_engine_num_units(e); i++) {
    zs_unit *u = zs_engine_unit(e, i);
    for (int t = 0; t < zs_unit_num_tensors(u); t++) {
      float *h = NULL;
      locate(&lc, u, i, t, zs_unit_tensor_name(u, t), zs_unit_numel(u, t), &h);
      if (set)
        ZS_OK_OR_DIE(zs_unit_set_param_n(u, t, h, zs_unit_numel(u, t)));
      else
        ZS_OK_OR_DIE(zs_unit_get_param(u, t, h));
    }
  }
}

/* One deterministic step: grad = param / 2 + a rank-independent offset, on every rank. */
static void step(zs_engine *e, zs_unit **u) {
  ZS_OK_OR_DIE(zs_engine_begin_step(e, 1));
  for (int i = L + 1; i >= 0; i--) {
    ZS_OK_OR_DIE(zs_unit_gather(u[i]));
    for (int t = 0; t < zs_unit_num_tensors(u[i]); t++) {
      const float *pp = zs_unit_param(u[i], t);
      float *g = zs_unit_grad(u[i], t);
      for (int64_t j = 0; j < zs_unit_numel(u[i], t); j++)
        g[j] += 0.5f * pp[j] + value(i, j, 99);
    }
    ZS_OK_OR_DIE(zs_unit_grads_ready(u[i]));
    ZS_OK_OR_DIE(zs_unit_release(u[i]));
  }
  ZS_OK_OR_DIE(zs_engine_step(e, NULL));
}

static void names(zs_engine *e, zs_unit **u) {
  int idx = -1;
  ZS_OK_OR_DIE(zs_unit_tensor_index(u[2], "qkvb", &idx));
  ZS_EXPECT(idx == 2, "qkvb is tensor 2, got %d", idx);
  ZS_EXPECT_STATUS(zs_unit_tensor_index(u[1], "qkv_w", &idx), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'h0'") && strstr(zs_last_error(), "'qkv_w'") &&
                strstr(zs_last_error(), "'qkvw'"),
            "names the unit, the name and the tensors: %s", zs_last_error());
  ZS_EXPECT_STATUS(zs_unit_tensor_index(NULL, "w", &idx), ZS_ERR_INVALID_ARG);
  zs_unit *f = NULL;
  ZS_OK_OR_DIE(zs_engine_find_unit(e, "lnf", &f));
  ZS_EXPECT(f == u[L + 1], "find_unit(lnf)");
  ZS_EXPECT_STATUS(zs_engine_find_unit(e, "h9", &f), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'h9'") != NULL, "names the unit: %s", zs_last_error());
  ZS_EXPECT(zs_unit_tensor_name(u[0], 1) && !strcmp(zs_unit_tensor_name(u[0], 1), "wpe") &&
                zs_unit_tensor_name(u[0], 2) == NULL && zs_unit_num_tensors(u[1]) == 4,
            "tensor names and counts");
}

static void run_stage(zs_comm *comm, int stage) {
  params src, got, viaB, neg, zero;
  alloc_params(&src, 1);
  alloc_params(&got, -1);
  alloc_params(&viaB, -1);
  alloc_params(&neg, 2);
  alloc_params(&zero, -1);
  zs_unit *ua[L + 2], *ub[L + 2];
  zs_engine *a = make_engine(comm, stage, ua), *b = make_engine(comm, stage, ub);
  locator lc = {&src, NULL, NULL, 0, 0};
  ZS_EXPECT_STATUS(zs_engine_set_params(a, locate, &lc), ZS_ERR_STATE); /* before commit */
  names(a, ua);
  ZS_OK_OR_DIE(zs_engine_commit(a));
  ZS_OK_OR_DIE(zs_engine_commit(b));

  /* Bulk set, bulk get: the source arrays come back bit for bit. */
  ZS_OK_OR_DIE(zs_engine_set_params(a, locate, &lc));
  ZS_EXPECT(lc.calls == 2 + 4 * L + 2, "one callback per tensor, got %d", lc.calls);
  locator lg = {&got, NULL, NULL, 0, 0};
  ZS_OK_OR_DIE(zs_engine_get_params(a, locate, &lg));
  ZS_EXPECT(same(&src, &got), "stage %d: zs_engine_get_params differs from what was set", stage);
  for (int i = 0; i < L + 2; i++)
    ZS_EXPECT(stage < 3 || !zs_unit_is_gathered(ua[i]), "stage 3: unit %d left gathered", i);
  per_tensor(a, &viaB, 0);
  ZS_EXPECT(same(&src, &viaB), "stage %d: zs_unit_get_param after the bulk set differs", stage);

  /* The per-tensor path on engine b holds the same bits, also after a step. */
  per_tensor(b, &src, 1);
  step(a, ua);
  step(b, ub);
  ZS_OK_OR_DIE(zs_engine_get_params(a, locate, &lg));
  per_tensor(b, &viaB, 0);
  ZS_EXPECT(same(&got, &viaB), "stage %d: after a step, bulk-set and per-tensor engines differ",
            stage);
  ZS_EXPECT(!same(&got, &src), "the step changed nothing");

  /* A refusal writes nothing; a skipped tensor is left alone. */
  locator ln = {&neg, "lnf", "b", 0, 0};
  ZS_EXPECT_STATUS(zs_engine_set_params(a, locate, &ln), ZS_ERR_INVALID_ARG);
  ZS_EXPECT(strstr(zs_last_error(), "'lnf'") && strstr(zs_last_error(), "'b'"),
            "names the refused tensor: %s", zs_last_error());
  params after;
  alloc_params(&after, -1);
  locator lf = {&after, NULL, NULL, 0, 0};
  ZS_OK_OR_DIE(zs_engine_get_params(a, locate, &lf));
  ZS_EXPECT(same(&after, &got), "stage %d: a refused set wrote something", stage);
  locator lz = {&zero, NULL, NULL, 1, 0};
  ZS_OK_OR_DIE(zs_engine_set_params(a, locate, &lz));
  ZS_OK_OR_DIE(zs_engine_get_params(a, locate, &lf));
  memset(got.lnfb, 0, sizeof(float) * C);
  ZS_EXPECT(same(&after, &got), "stage %d: only lnf.b may change when the rest is skipped", stage);
  ZS_EXPECT_STATUS(zs_engine_get_params(a, NULL, NULL), ZS_ERR_INVALID_ARG);
  ZS_EXPECT_STATUS(zs_engine_set_params(NULL, locate, &lc), ZS_ERR_INVALID_ARG);
  ZS_OK_OR_DIE(zs_engine_begin_step(a, 1));
  ZS_EXPECT_STATUS(zs_engine_get_params(a, locate, &lf), ZS_ERR_STATE);
  zs_engine_destroy(a);
  zs_engine_destroy(b);
  free_params(&src);
  free_params(&got);
  free_params(&viaB);
  free_params(&neg);
  free_params(&zero);
  free_params(&after);
}

int main(int argc, char **argv) {
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  for (int stage = 0; stage <= 3; stage++)
    run_stage(comm, stage);
  const int r = zs_comm_rank(comm);
  zs_comm_destroy(comm);
  if (r == 0 && !zs_test_failures) printf("test_engine_params_bulk: OK\n");
  ZS_TEST_END("test_engine_params_bulk");
}
