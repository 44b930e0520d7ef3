/* The start and end of a training example's process (see train_run.h): MPI up, options and
 * callbacks bound, data loaded; at the end the error printed and everything freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_run.h"
#include "util.h"

int ex_run_start(ex_run *r, int *argc, char ***argv, const char *prog) {
  memset(r, 0, sizeof *r);
  zs_status st = zs_comm_init_mpi(argc, argv, &r->comm);
  if (st != ZS_OK) {
    fprintf(stderr, "%s: zs_comm_init_mpi -> %s: %s\n", prog, zs_status_str(st), zs_last_error());
    return -1;
  }
  r->rank = zs_comm_rank(r->comm);
  r->world = zs_comm_size(r->comm);
  r->dp_rank = r->rank;
  r->dp_world = r->world;
  return 0;
}

void ex_run_bind(ex_run *r, const ex_train_args *a, void *ctx, ex_micro_fn micro, ex_eval_fn eval) {
  r->a = *a;
  if (r->rank == 0) ex_train_args_warn(a); /* once, not once per rank */
  r->ctx = ctx;
  r->micro = micro;
  r->eval = eval;
}

int ex_load_data(ex_run *r) {
  const ex_train_args *a = &r->a;
  TRY(gpt2_data_load(&r->data, a->data ? a->data : a->text, a->data == NULL, a->val_frac, a->seed));
  r->unigram = gpt2_data_unigram_entropy(&r->data);
  return 0;
}

int ex_run_end(ex_run *r, int rc, const char *prog, void (*free_model)(void *ctx)) {
  if (rc < 0) fprintf(stderr, "%s (rank %d): error: %s\n", prog, r->rank, gpt2_error());
  free_model(r->ctx);
  zs_k_destroy(r->k);
  zs_engine_destroy(r->eng);
  zs_comm_destroy(r->comm);
  gpt2_metrics_close(&r->met);
  gpt2_data_free(&r->data);
  free(r->tok);
  free(r->tgt);
  return rc < 0 ? 1 : 0;
}
