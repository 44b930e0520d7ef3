/* mlp.c — train a small MLP classifier with zshard, on the CPU or a CUDA device.
 *
 *   mpirun --oversubscribe -np 4 build/examples/mlp --stage 3 --steps 30
 *   build/examples/mlp --device cuda --stage 2 --micro-steps 2      (one process is fine too)
 *
 * The task: points drawn around one of K fixed random centres in D dimensions (a fixed seed, so
 * every run and every rank sees the same data); the model: `--layers` linear layers of width
 * `--hidden` with GELU between them, softmax cross-entropy on top. Each linear layer is one zshard
 * unit (weight + bias). Each rank takes its slice of every global batch; zshard averages the
 * gradients over ranks and micro-steps, shards them and the AdamW state by `--stage`.
 *
 * The forward/backward use only the public kernels of zshard.h (zs_k_matmul_*, zs_k_gelu_*,
 * zs_k_softmax_xent) and its buffers (zs_k_alloc, _zero, _copy), so the same code runs on
 * both devices and the example needs no CUDA runtime of its own. The first micro-step of every step
 * also runs the forward of a fixed evaluation set (the same rows on every rank, so every rank
 * computes the same number without communicating): the loss of the parameters entering the step.
 * The program exits 1 unless the last step's evaluation loss is below --check-ratio times the
 * first step's (the loss of the initial parameters).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zshard_kernels.h"

#define MAX_LAYERS 16

/* Command-line options. */
typedef struct {
  zs_device device;
  int stage, steps, micro_steps, deterministic;
  int in_dim, classes, hidden, layers, batch, eval_rows;
  unsigned offload;
  float lr, check_ratio;
  uint64_t seed;
} opts;

/* One rank's model and activations. Device buffers live on the kernels' device. Rows 0..n-1 of
   every activation are this rank's training rows of the current micro-step; on the first
   micro-step of a step rows n..n+eval-1 are the evaluation rows (forward only). Buffers hold
   max_rows rows. */
typedef struct {
  const opts *o;
  int rank, world;
  int n;                   /* training rows of this rank per micro-step */
  int rows, max_rows;      /* rows in use now (n, or n + eval on a step's first micro-step) */
  int dim[MAX_LAYERS + 1]; /* dim[0] = input, dim[layers] = classes */
  zs_comm *comm;           /* for the logged loss's mean over ranks (zs_comm_allreduce) */
  zs_engine *e;
  zs_kernels *k;
  zs_unit *unit[MAX_LAYERS]; /* layer l: tensor 0 = weight [dim[l+1], dim[l]], 1 = bias */
  void *act[MAX_LAYERS];     /* act[0] = x; act[l] = gelu(pre[l-1]) : rows x dim[l] */
  void *pre[MAX_LAYERS];     /* pre-activation of layer l (logits for the last): rows x dim[l+1] */
  void *dact[MAX_LAYERS];    /* gradient w.r.t. act[l]: n x dim[l] (l >= 1; the input has none) */
  void *dpre[MAX_LAYERS];    /* gradient w.r.t. pre[l]: n x dim[l+1] */
  void *targets, *losses;    /* int32 [rows], fp32 [rows] */
  float *host_x, *host_losses; /* host staging */
  int *host_targets;
  float *centres; /* classes x in_dim */
} model;

/* Prints the failing call with its status and zshard's message, then jumps to cleanup. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    zs_status rc_ = (call);                                                                        \
    if (rc_ != ZS_OK) {                                                                            \
      fprintf(stderr, "mlp: %s failed: %s: %s\n", #call, zs_status_str(rc_), zs_last_error());     \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Synthetic data: every number comes from a counter-based generator, so sample g of the stream is
 * the same on every rank and in every run, whatever the world size. */

/* splitmix64: a well-mixed 64-bit hash of x. */
static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Uniform in (0, 1) from a 64-bit state that is advanced. */
static double uniform01(uint64_t *s) {
  *s = mix64(*s);
  return ((double)(*s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal (Box-Muller). */
static double normal(uint64_t *s) {
  double u = uniform01(s), v = uniform01(s);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Writes sample `g` of stream `stream` (0 = training, 1 = evaluation): its label and its features,
   a point at distance ~1.5 standard deviations per axis from its class centre. */
static int make_sample(const model *m, uint64_t stream, uint64_t g, float *x) {
  const opts *o = m->o;
  uint64_t s = mix64(o->seed ^ mix64(stream * 0x100000001b3ull + g));
  int label = (int)(uniform01(&s) * o->classes) % o->classes;
  for (int j = 0; j < o->in_dim; j++)
    x[j] = m->centres[(size_t)label * o->in_dim + j] + 1.5f * (float)normal(&s);
  return label;
}

/* Uploads this rank's training rows of micro-batch `mb`, then evaluation rows up to m->rows
   (zs_k_copy from the host returns once the copy is done, so the staging can be reused). */
static zs_status load_batch(model *m, uint64_t mb) {
  const opts *o = m->o;
  uint64_t first = mb * (uint64_t)o->batch + (uint64_t)m->rank * (uint64_t)m->n;
  for (int i = 0; i < m->rows; i++) {
    float *x = m->host_x + (size_t)i * o->in_dim;
    m->host_targets[i] = i < m->n ? make_sample(m, 0, first + (uint64_t)i, x)
                                  : make_sample(m, 1, (uint64_t)(i - m->n), x);
  }
  zs_status rc = zs_k_copy(m->k, m->act[0], m->host_x, sizeof(float) * (size_t)m->rows * o->in_dim);
  if (rc != ZS_OK) return rc;
  return zs_k_copy(m->k, m->targets, m->host_targets, sizeof(int) * (size_t)m->rows);
}

/* ---------------------------------------------------------------------------------------------
 * Model: registration, initial values, forward, backward. */

/* Registers one unit per linear layer: weight [out, in] and bias [out] (no weight decay). */
static zs_status add_units(model *m) {
  for (int l = 0; l < m->o->layers; l++) {
    char name[16];
    snprintf(name, sizeof name, "fc%d", l);
    zs_tensor_desc t[2] = {
        {"weight", 2, {m->dim[l + 1], m->dim[l]}, 0},
        {"bias", 1, {m->dim[l + 1]}, 1},
    };
    zs_status rc = zs_engine_add_unit(m->e, name, 2, t, &m->unit[l]);
    if (rc != ZS_OK) return rc;
  }
  return ZS_OK;
}

/* Sets every layer to U(-1/sqrt(in), 1/sqrt(in)) weights and zero biases, the same on every rank
   (the fixed seed), and draws the class centres. */
static zs_status init_params(model *m) {
  const opts *o = m->o;
  uint64_t s = mix64(o->seed + 7);
  for (int i = 0; i < o->classes * o->in_dim; i++)
    m->centres[i] = (float)normal(&s);
  for (int l = 0; l < o->layers; l++) {
    size_t nw = (size_t)m->dim[l + 1] * m->dim[l];
    float *w = malloc(sizeof(float) * nw), *b = calloc((size_t)m->dim[l + 1], sizeof(float));
    zs_status rc = (w && b) ? ZS_OK : ZS_ERR_OUT_OF_MEMORY;
    float a = 1.0f / sqrtf((float)m->dim[l]);
    for (size_t i = 0; w && i < nw; i++)
      w[i] = a * (float)(2.0 * uniform01(&s) - 1.0);
    if (rc == ZS_OK) rc = zs_unit_set_param(m->unit[l], 0, w);
    if (rc == ZS_OK) rc = zs_unit_set_param(m->unit[l], 1, b);
    free(w);
    free(b);
    if (rc != ZS_OK) return rc;
  }
  return ZS_OK;
}

/* Forward of the rows in use (training, then evaluation) through every layer: gather, compute,
   release.
   On success m->losses holds the per-row losses and the top layer's gradient sits in dpre. */
static zs_status forward(model *m) {
  const opts *o = m->o;
  for (int l = 0; l < o->layers; l++) {
    zs_unit *u = m->unit[l];
    zs_status rc = zs_unit_gather(u);
    if (rc == ZS_OK)
      rc = zs_k_matmul_fwd(m->k, m->pre[l], m->act[l], zs_unit_param(u, 0), zs_unit_param(u, 1),
                           m->rows, m->dim[l], m->dim[l + 1]);
    if (rc == ZS_OK && l + 1 < o->layers)
      rc = zs_k_gelu_fwd(m->k, m->act[l + 1], m->pre[l], (size_t)m->rows * m->dim[l + 1]);
    zs_status rc2 = zs_unit_release(u);
    if (rc != ZS_OK) return rc;
    if (rc2 != ZS_OK) return rc2;
  }
  /* Training rows: loss and dlogits of their mean (1/n each). Evaluation rows: loss only. */
  void *logits = m->pre[o->layers - 1];
  size_t stride = (size_t)o->classes;
  zs_status rc = zs_k_softmax_xent(m->k, m->losses, m->dpre[o->layers - 1], logits, m->targets,
                                   1.0f / (float)m->n, m->n, o->classes, o->classes);
  if (rc != ZS_OK || m->rows == m->n) return rc;
  return zs_k_softmax_xent(m->k, (float *)m->losses + m->n, NULL,
                           (float *)logits + (size_t)m->n * stride, (int *)m->targets + m->n, 0.0f,
                           m->rows - m->n, o->classes, o->classes);
}

/* Backward of the training rows, top layer first: gather, accumulate the weight/bias gradients
   into zs_unit_grad, hand the unit back (grads_ready, release), then step through the GELU. The
   first layer's input needs no gradient: its matmul backward gets dinp = NULL. */
static zs_status backward(model *m) {
  for (int l = m->o->layers - 1; l >= 0; l--) {
    zs_unit *u = m->unit[l];
    size_t din = (size_t)m->n * m->dim[l];
    zs_status rc = l > 0 ? zs_k_zero(m->k, m->dact[l], sizeof(float) * din) : ZS_OK;
    if (rc == ZS_OK) rc = zs_unit_gather(u);
    if (rc == ZS_OK)
      rc = zs_k_matmul_bwd(m->k, l > 0 ? m->dact[l] : NULL, zs_unit_grad(u, 0), zs_unit_grad(u, 1),
                           m->dpre[l], m->act[l], zs_unit_param(u, 0), m->n, m->dim[l],
                           m->dim[l + 1]);
    if (rc == ZS_OK) rc = zs_unit_grads_ready(u);
    zs_status rc2 = zs_unit_release(u);
    if (rc != ZS_OK) return rc;
    if (rc2 != ZS_OK) return rc2;
    if (l > 0) {
      rc = zs_k_zero(m->k, m->dpre[l - 1], sizeof(float) * din);
      if (rc == ZS_OK) rc = zs_k_gelu_bwd(m->k, m->dpre[l - 1], m->pre[l - 1], m->dact[l], din);
      if (rc != ZS_OK) return rc;
    }
  }
  return ZS_OK;
}

/* Mean over rows [from, to) of the host copy of the losses. */
static double mean_loss(const model *m, int from, int to) {
  double s = 0.0;
  for (int i = from; i < to; i++)
    s += m->host_losses[i];
  return s / (double)(to - from);
}

/* One optimizer step of micro_steps micro-batches. Writes the training loss (the mean over every
   rank's micro-batches: zs_comm_allreduce, no MPI call of our own) and the evaluation loss of the
   parameters as they were at the start of the step. */
static zs_status train_step(model *m, int step, double *train, double *eval, zs_step_stats *st) {
  const opts *o = m->o;
  zs_status rc = zs_engine_begin_step(m->e, o->micro_steps);
  *train = 0.0;
  for (int mi = 0; rc == ZS_OK && mi < o->micro_steps; mi++) {
    m->rows = mi == 0 ? m->max_rows : m->n; /* evaluate once per step */
    rc = load_batch(m, (uint64_t)step * (uint64_t)o->micro_steps + (uint64_t)mi);
    if (rc == ZS_OK) rc = forward(m);
    if (rc == ZS_OK)
      rc = zs_k_copy(m->k, m->host_losses, m->losses, sizeof(float) * (size_t)m->rows);
    if (rc == ZS_OK) {
      *train += mean_loss(m, 0, m->n) / o->micro_steps;
      if (mi == 0) *eval = mean_loss(m, m->n, m->rows);
      rc = backward(m);
    }
  }
  if (rc == ZS_OK) rc = zs_engine_step(m->e, st);
  if (rc == ZS_OK) rc = zs_comm_allreduce(m->comm, train, train, 1, ZS_HOST_F64, ZS_RED_MEAN);
  return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Setup, reporting, main. */

/* Allocates every activation buffer on the kernels' device (zero-filled) and the host staging. */
static zs_status alloc_buffers(model *m) {
  const opts *o = m->o;
  zs_status rc = ZS_OK;
  for (int l = 0; rc == ZS_OK && l < o->layers; l++) {
    rc = zs_k_alloc(m->k, sizeof(float) * (size_t)m->max_rows * m->dim[l], &m->act[l]);
    if (rc == ZS_OK)
      rc = zs_k_alloc(m->k, sizeof(float) * (size_t)m->max_rows * m->dim[l + 1], &m->pre[l]);
    if (rc == ZS_OK && l > 0)
      rc = zs_k_alloc(m->k, sizeof(float) * (size_t)m->n * m->dim[l], &m->dact[l]);
    if (rc == ZS_OK)
      rc = zs_k_alloc(m->k, sizeof(float) * (size_t)m->n * m->dim[l + 1], &m->dpre[l]);
  }
  if (rc == ZS_OK) rc = zs_k_alloc(m->k, sizeof(int) * (size_t)m->max_rows, &m->targets);
  if (rc == ZS_OK) rc = zs_k_alloc(m->k, sizeof(float) * (size_t)m->max_rows, &m->losses);
  if (rc != ZS_OK) return rc;
  m->host_x = malloc(sizeof(float) * (size_t)m->max_rows * o->in_dim);
  m->host_targets = malloc(sizeof(int) * (size_t)m->max_rows);
  m->host_losses = malloc(sizeof(float) * (size_t)m->max_rows);
  m->centres = malloc(sizeof(float) * (size_t)o->classes * o->in_dim);
  if (!m->host_x || !m->host_targets || !m->host_losses || !m->centres) {
    fprintf(stderr, "mlp: out of host memory for the staging buffers\n");
    return ZS_ERR_OUT_OF_MEMORY;
  }
  return ZS_OK;
}

/* Frees what alloc_buffers allocated (any subset of it; device buffers need the kernels). */
static void free_buffers(model *m) {
  for (int l = 0; l < MAX_LAYERS; l++) {
    zs_k_free(m->k, m->act[l]);
    zs_k_free(m->k, m->pre[l]);
    zs_k_free(m->k, m->dact[l]);
    zs_k_free(m->k, m->dpre[l]);
  }
  zs_k_free(m->k, m->targets);
  zs_k_free(m->k, m->losses);
  free(m->host_x);
  free(m->host_targets);
  free(m->host_losses);
  free(m->centres);
}

/* Formats a byte count as B / KiB / MiB / GiB into buf. */
static const char *human(size_t bytes, char *buf, size_t len) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB"};
  double v = (double)bytes;
  int i = 0;
  while (v >= 1024.0 && i < 3) {
    v /= 1024.0;
    i++;
  }
  snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", v, unit[i]);
  return buf;
}

/* Prints this rank's memory by category (current and peak) as one block. Ranks print in turn,
   staggered by a short sleep: the example has no barrier of its own and lines of different
   ranks would otherwise interleave. */
static void print_memory(const model *m) {
  zs_memory mem;
  if (zs_engine_memory(m->e, &mem) != ZS_OK) {
    fprintf(stderr, "mlp: zs_engine_memory: %s\n", zs_last_error());
    return;
  }
  struct timespec ts = {0, 150000000L * m->rank};
  nanosleep(&ts, NULL);
  const char *name[] = {"params", "grads", "optimizer", "buffers", "host_pinned", "total"};
  const zs_bytes *b[] = {&mem.params,  &mem.grads,       &mem.optimizer,
                         &mem.buffers, &mem.host_pinned, &mem.total};
  char out[1024], c[32], p[32];
  int len = snprintf(out, sizeof out, "memory of rank %d/%d (stage %d)\n  %-12s %12s %12s\n",
                     m->rank, m->world, m->o->stage, "category", "current", "peak");
  for (int i = 0; i < 6 && len > 0 && (size_t)len < sizeof out; i++)
    len += snprintf(out + len, sizeof out - (size_t)len, "  %-12s %12s %12s\n", name[i],
                    human(b[i]->cur, c, sizeof c), human(b[i]->peak, p, sizeof p));
  fputs(out, stdout);
  fflush(stdout);
}

/* Prints the usage text. */
static void usage(void) {
  fprintf(stderr,
          "usage: mlp [--device cpu|cuda] [--stage 0..3] [--steps N] [--micro-steps N] [--lr F]\n"
          "           [--deterministic] [--hidden N] [--layers N] [--batch N] [--eval N]\n"
          "           [--in N] [--classes N] [--offload none|opt|params|both] [--seed N]\n"
          "           [--check-ratio F]   (exit 1 unless final eval loss < F x initial; 0: off)\n"
          "Run under mpirun for several ranks, e.g. mpirun -np 4 mlp --stage 3.\n");
}

/* Parses the value v of flag a into o. Returns 0 when the flag is known and its value valid. */
static int parse_flag(opts *o, const char *a, const char *v) {
  const struct {
    const char *flag;
    int *dst;
  } ints[] = {
      {"--stage", &o->stage},    {"--steps", &o->steps},   {"--micro-steps", &o->micro_steps},
      {"--hidden", &o->hidden},  {"--layers", &o->layers}, {"--batch", &o->batch},
      {"--eval", &o->eval_rows}, {"--in", &o->in_dim},     {"--classes", &o->classes}};
  const char *offload[] = {"none", "opt", "params", "both"}; /* index = ZS_OFFLOAD_* bits */
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (!strcmp(a, ints[i].flag)) return *ints[i].dst = atoi(v), 0;
  if (!strcmp(a, "--lr")) return o->lr = strtof(v, NULL), 0;
  if (!strcmp(a, "--check-ratio")) return o->check_ratio = strtof(v, NULL), 0;
  if (!strcmp(a, "--seed")) return o->seed = strtoull(v, NULL, 10), 0;
  if (!strcmp(a, "--device") && (!strcmp(v, "cpu") || !strcmp(v, "cuda")))
    return o->device = strcmp(v, "cuda") ? ZS_DEVICE_CPU : ZS_DEVICE_CUDA, 0;
  for (unsigned b = 0; !strcmp(a, "--offload") && b < 4; b++)
    if (!strcmp(v, offload[b])) return o->offload = b, 0;
  fprintf(stderr, "mlp: unknown flag or bad value: %s %s\n", a, v);
  return 1;
}

/* Parses argv into o (defaults first). Returns 0 on success, 1 on a bad or unknown flag. */
static int parse_args(int argc, char **argv, opts *o) {
  *o = (opts){.device = ZS_DEVICE_CPU,
              .stage = 3,
              .steps = 30,
              .micro_steps = 1,
              .in_dim = 32,
              .classes = 10,
              .hidden = 128,
              .layers = 3,
              .batch = 64,
              .eval_rows = 128,
              .lr = 5e-3f,
              .check_ratio = 0.5f,
              .seed = 1234};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--deterministic")) {
      o->deterministic = 1;
    } else if (i + 1 >= argc) {
      fprintf(stderr, "mlp: %s needs a value (or is unknown)\n", argv[i]);
      return 1;
    } else if (parse_flag(o, argv[i], argv[i + 1])) {
      return 1;
    } else {
      i++;
    }
  }
  if (o->steps < 1 || o->micro_steps < 1 || o->hidden < 1 || o->layers < 1 ||
      o->layers > MAX_LAYERS || o->batch < 1 || o->eval_rows < 1 || o->in_dim < 1 ||
      o->classes < 2) {
    fprintf(stderr, "mlp: sizes must be >= 1 (classes >= 2, layers <= %d)\n", MAX_LAYERS);
    return 1;
  }
  return 0;
}

/* Creates the engine, registers and initialises the model, creates the kernels and buffers. The
   stage and other config errors are zshard's to report (e.g. --stage 7). */
static zs_status setup(model *m, zs_comm *comm) {
  const opts *o = m->o;
  zs_config cfg;
  zs_config_default(&cfg);
  cfg.stage = o->stage;
  cfg.device = o->device;
  cfg.deterministic = o->deterministic;
  cfg.offload = o->offload;
  cfg.adamw.lr = o->lr;
  for (int l = 0; l <= o->layers; l++)
    m->dim[l] = l == 0 ? o->in_dim : l == o->layers ? o->classes : o->hidden;
  /* This rank's slice of the global batch: the first batch % world ranks get one row more. */
  m->n = o->batch / m->world + (m->rank < o->batch % m->world);
  m->max_rows = m->rows = m->n + o->eval_rows;
  if (m->n < 1) {
    fprintf(stderr, "mlp: --batch %d gives rank %d no rows: use at least one row per rank\n",
            o->batch, m->rank);
    return ZS_ERR_INVALID_ARG;
  }
  zs_status rc = zs_engine_create(&cfg, comm, &m->e);
  if (rc == ZS_OK) rc = add_units(m);
  if (rc == ZS_OK) rc = zs_engine_commit(m->e);
  if (rc == ZS_OK) rc = zs_k_create(o->device, ZS_F32, zs_engine_stream(m->e), &m->k);
  if (rc == ZS_OK) rc = zs_k_watch(m->k, m->e); /* host waits bounded by comm_timeout_s */
  if (rc == ZS_OK) rc = alloc_buffers(m);
  if (rc == ZS_OK) rc = init_params(m);
  return rc;
}

/* Trains for o->steps steps, printing one line per step from rank 0. Returns 0 when the final
   evaluation loss passed the check, 1 otherwise or on an error. */
static int train(model *m) {
  const opts *o = m->o;
  double first = 0.0, eval = 0.0, train_loss = 0.0;
  for (int step = 0; step < o->steps; step++) {
    zs_step_stats st = {0};
    zs_status rc = train_step(m, step, &train_loss, &eval, &st);
    if (rc != ZS_OK) {
      fprintf(stderr, "mlp: rank %d step %d: %s: %s\n", m->rank, step, zs_status_str(rc),
              zs_last_error());
      return 1;
    }
    if (step == 0) first = eval;
    if (m->rank == 0)
      printf("step %4d/%d | eval loss %.4f | train loss %.4f | grad norm %.3f%s | "
             "%.1f ms\n",
             step + 1, o->steps, eval, train_loss, st.grad_norm,
             st.skipped_nonfinite ? " (skipped)" : "", st.step_seconds * 1e3);
    fflush(stdout);
  }
  int ok = o->check_ratio <= 0.0f || eval < o->check_ratio * first;
  if (m->rank == 0 && o->check_ratio > 0.0f)
    printf("eval loss %.4f -> %.4f (%s: must fall below %.2f x the first)\n", first, eval,
           ok ? "ok" : "FAILED", o->check_ratio);
  else if (m->rank == 0)
    printf("eval loss %.4f -> %.4f\n", first, eval);
  return !ok;
}

int main(int argc, char **argv) {
  opts o;
  model m = {0};
  zs_comm *comm = NULL;
  int status = 1;
  m.o = &o;
  if (parse_args(argc, argv, &o)) {
    usage();
    return 2;
  }
  CHECK(zs_comm_init_mpi(&argc, &argv, &comm));
  m.rank = zs_comm_rank(comm);
  m.world = zs_comm_size(comm);
  m.comm = comm;
  CHECK(setup(&m, comm));
  if (m.rank == 0)
    printf("mlp: %s | layers %d x hidden %d, %d classes | batch %d (%d micro-steps) x %d steps\n",
           zs_engine_info(m.e), o.layers, o.hidden, o.classes, o.batch, o.micro_steps, o.steps);
  status = train(&m);
  print_memory(&m);
fail:
  free_buffers(&m);
  zs_k_destroy(m.k);
  zs_engine_destroy(m.e);
  zs_comm_destroy(comm);
  return status;
}
