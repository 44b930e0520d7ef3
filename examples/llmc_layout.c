/* llmc_layout.c — porting a model that keeps llm.c's parameter layout: one array per parameter
 * type across all layers (all layers' qkv weights in one [L, 3C, C] array), in one allocation.
 *
 *   mpirun --oversubscribe -np 2 build/examples/llmc_layout --stage 3 --steps 5
 *
 * zshard wants units (embedding, each block, the final norm) whose tensors it shards. Instead of
 * 12 * L + 4 zs_unit_set_param calls with numeric indices, the program gives one callback that
 * says where each (unit, tensor name) lives in its own arrays, and loads (zs_engine_set_params)
 * and reads back (zs_engine_get_params) the whole model in one call each. Inside the step loop
 * tensors are found by name (zs_unit_tensor_index), so a wrong name is an error, never another
 * tensor. The "training" is a stand-in: loss = 0.5 * sum of the squared weights of every matrix
 * (gradient = the weights), so the program runs anywhere in a second; the logged loss is the
 * mean over ranks (zs_comm_allreduce). CPU device: zs_unit_param / zs_unit_grad are host memory.
 * Exits 1 unless the model read back after loading is the program's arrays bit for bit and the
 * loss falls. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zshard.h"

/* llm.c's ParameterTensors, in its order. */
enum {
  WTE,
  WPE,
  LN1W,
  LN1B,
  QKVW,
  QKVB,
  ATTPROJW,
  ATTPROJB,
  LN2W,
  LN2B,
  FCW,
  FCB,
  FCPROJW,
  FCPROJB,
  LNFW,
  LNFB,
  NUM_PARAMETER_TENSORS
};
static const char *const type_name[NUM_PARAMETER_TENSORS] = {
    "wte",  "wpe",  "ln1w", "ln1b", "qkvw",    "qkvb",    "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw", "fcprojb", "lnfw",     "lnfb"};

typedef struct {
  int L, C, V, T; /* layers, channels, vocabulary, positions */
  size_t sizes[NUM_PARAMETER_TENSORS];
  float *memory;                     /* one allocation, as llm.c's params_memory */
  float *ptr[NUM_PARAMETER_TENSORS]; /* each type's array inside it */
} model;

/* llm.c's fill_in_parameter_sizes: the sizes of each type over all layers. */
static void model_sizes(model *m) {
  const size_t L = (size_t)m->L, C = (size_t)m->C;
  const size_t s[NUM_PARAMETER_TENSORS] = {(size_t)m->V * C,
                                           (size_t)m->T * C,
                                           L * C,
                                           L * C,
                                           L * 3 * C * C,
                                           L * 3 * C,
                                           L * C * C,
                                           L * C,
                                           L * C,
                                           L * C,
                                           L * 4 * C * C,
                                           L * 4 * C,
                                           L * C * 4 * C,
                                           L * C,
                                           C,
                                           C};
  memcpy(m->sizes, s, sizeof s);
}

/* Per-layer size of a block type (its array holds L of them). */
static size_t layer_size(const model *m, int type) {
  return m->sizes[type] / (size_t)m->L;
}

/* The one mapping from zshard's (unit, tensor name) to the program's arrays. Unit 0 is the
   embedding, units 1..L the blocks, unit L+1 the final norm; tensors carry llm.c's type names. */
static int locate(void *user, const zs_unit *u, int unit_index, int t, const char *name,
                  int64_t numel, float **host) {
  model *m = user;
  (void)u;
  (void)t;
  for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
    if (strcmp(name, type_name[k]) != 0) continue;
    const int block = unit_index >= 1 && unit_index <= m->L;
    *host = m->ptr[k] + (block ? (size_t)(unit_index - 1) * layer_size(m, k) : 0);
    return (size_t)numel == (block ? layer_size(m, k) : m->sizes[k]) ? 0 : 1;
  }
  return 1; /* a tensor this program does not know: refuse the whole call */
}

/* Registers the units with llm.c's type names as tensor names. */
static zs_status add_units(zs_engine *e, const model *m, zs_unit **u) {
  const int64_t C = m->C;
  zs_tensor_desc emb[2] = {{"wte", 2, {m->V, C}, 0}, {"wpe", 2, {m->T, C}, 0}};
  zs_tensor_desc blk[12] = {
      {"ln1w", 1, {C}, 1},     {"ln1b", 1, {C}, 1},           {"qkvw", 2, {3 * C, C}, 0},
      {"qkvb", 1, {3 * C}, 1}, {"attprojw", 2, {C, C}, 0},    {"attprojb", 1, {C}, 1},
      {"ln2w", 1, {C}, 1},     {"ln2b", 1, {C}, 1},           {"fcw", 2, {4 * C, C}, 0},
      {"fcb", 1, {4 * C}, 1},  {"fcprojw", 2, {C, 4 * C}, 0}, {"fcprojb", 1, {C}, 1}};
  zs_tensor_desc lnf[2] = {{"lnfw", 1, {C}, 1}, {"lnfb", 1, {C}, 1}};
  zs_status rc = zs_engine_add_unit(e, "embed", 2, emb, &u[0]);
  for (int l = 0; l < m->L && rc == ZS_OK; l++) {
    char name[16];
    snprintf(name, sizeof name, "h%d", l);
    rc = zs_engine_add_unit(e, name, 12, blk, &u[1 + l]);
  }
  if (rc == ZS_OK) rc = zs_engine_add_unit(e, "lnf", 2, lnf, &u[m->L + 1]);
  return rc;
}

/* One step of the stand-in loss 0.5 * |W|^2 over the weight matrices (found by name in each
   block), whose gradient is W itself; *loss gets this rank's loss. */
static zs_status train_step(zs_engine *e, zs_unit **u, const model *m, double *loss) {
  static const char *const mats[4] = {"qkvw", "attprojw", "fcw", "fcprojw"};
  zs_status rc = zs_engine_begin_step(e, 1);
  *loss = 0;
  /* Backward order; the final norm and the embedding get no gradient from this loss. */
  if (rc == ZS_OK) rc = zs_unit_grads_ready(u[m->L + 1]);
  for (int l = m->L; l >= 1 && rc == ZS_OK; l--) {
    rc = zs_unit_gather(u[l]);
    for (int k = 0; k < 4 && rc == ZS_OK; k++) {
      int t;
      rc = zs_unit_tensor_index(u[l], mats[k], &t);
      if (rc != ZS_OK) break;
      const float *w = zs_unit_param(u[l], t);
      float *g = zs_unit_grad(u[l], t);
      for (int64_t i = 0; i < zs_unit_numel(u[l], t); i++) {
        *loss += 0.5 * (double)w[i] * w[i];
        g[i] += w[i];
      }
    }
    if (rc == ZS_OK) rc = zs_unit_grads_ready(u[l]);
    if (rc == ZS_OK) rc = zs_unit_release(u[l]);
  }
  if (rc == ZS_OK) rc = zs_unit_grads_ready(u[0]);
  if (rc == ZS_OK) rc = zs_engine_step(e, NULL);
  return rc;
}

int main(int argc, char **argv) {
  model m = {.L = 4, .C = 32, .V = 96, .T = 16};
  int stage = 3, steps = 5, status = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--stage")) stage = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
  }
  model_sizes(&m);
  size_t total = 0;
  for (int k = 0; k < NUM_PARAMETER_TENSORS; k++)
    total += m.sizes[k];
  m.memory = malloc(total * sizeof(float));
  float *init = malloc(total * sizeof(float));
  zs_unit **u = calloc((size_t)m.L + 2, sizeof *u);
  zs_comm *comm = NULL;
  zs_engine *e = NULL;
  if (!m.memory || !init || !u) return 1;
  float *p = m.memory; /* llm.c's point_parameters: the types back to back */
  for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
    m.ptr[k] = p;
    p += m.sizes[k];
  }
  uint64_t s = 42; /* the same values on every rank */
  for (size_t i = 0; i < total; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    init[i] = m.memory[i] = 0.02f * ((float)(s >> 40) / 16777216.0f - 0.5f);
  }
#define TRY(call)                                                                                  \
  do {                                                                                             \
    zs_status rc_ = (call);                                                                        \
    if (rc_ != ZS_OK) {                                                                            \
      fprintf(stderr, "llmc_layout: %s: %s: %s\n", #call, zs_status_str(rc_), zs_last_error());    \
      goto done;                                                                                   \
    }                                                                                              \
  } while (0)
  TRY(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm);
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = stage;
  cfg.adamw.lr = 1e-3f;
  cfg.adamw.weight_decay = 0.0f; /* the stand-in loss already pulls the weights to zero */
  TRY(zs_engine_create(&cfg, comm, &e));
  TRY(add_units(e, &m, u));
  TRY(zs_engine_commit(e));
  TRY(zs_engine_set_params(e, locate, &m)); /* the whole model, from the program's arrays */
  memset(m.memory, 0, total * sizeof(float));
  TRY(zs_engine_get_params(e, locate, &m)); /* and back (collective at stages 1-3) */
  int ok = memcmp(m.memory, init, total * sizeof(float)) == 0;
  if (rank == 0)
    printf("llmc_layout: %s | %d units | %zu params loaded and read back %s\n", zs_engine_info(e),
           zs_engine_num_units(e), total, ok ? "bit for bit" : "WRONG");
  double first = 0, loss = 0;
  for (int step = 0; step < steps; step++) {
    TRY(train_step(e, u, &m, &loss));
    TRY(zs_comm_allreduce(comm, &loss, &loss, 1, ZS_HOST_F64, ZS_RED_MEAN));
    if (step == 0) first = loss;
    if (rank == 0) printf("step %d: loss %.6f\n", step + 1, loss);
  }
  TRY(zs_engine_get_params(e, locate, &m)); /* the trained weights, in the program's layout */
  ok = ok && loss < first;
  if (rank == 0) printf("llmc_layout: %s\n", ok ? "ok" : "FAILED");
  status = ok ? 0 : 1;
done:
  zs_engine_destroy(e);
  zs_comm_destroy(comm);
  free(m.memory);
  free(init);
  free(u);
  return status;
}
