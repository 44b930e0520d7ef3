/* A rank that outlives its launcher stops (launcher_death.sh kills mpirun alone with SIGKILL):
 * this program trains a small model silently (nothing on stdout or stderr, so no write to the
 * dead launcher's pipes ends it first), saving every 5 steps into DIR/ck, until a call fails;
 * then it writes the message to DIR/stopped-rank<R>.txt, destroys the engine and exits 0. It
 * gives up after 10 minutes (exit 3): the ranks trained on.
 * Usage: mpirun -np 2 test_engine_launcher DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_model.h"
#include "zs_test.h"

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  zs_comm *comm = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &comm));
  const int rank = zs_comm_rank(comm);
  char ck[4096], out[4200];
  snprintf(ck, sizeof ck, "%s/ck", argv[1]);
  snprintf(out, sizeof out, "%s/stopped-rank%d.txt", argv[1], rank);
  zs_config c;
  zs_config_default(&c);
  c.stage = 3;
  c.comm_timeout_s = 30;
  zs_engine *e = NULL;
  zs_unit *u[TM_NUNITS];
  ZS_OK_OR_DIE(zs_engine_create(&c, comm, &e));
  for (int i = 0; i < TM_NUNITS; i++)
    ZS_OK_OR_DIE(
        zs_engine_add_unit(e, tm_units[i].name, tm_units[i].ntensors, tm_units[i].t, &u[i]));
  ZS_OK_OR_DIE(zs_engine_commit(e));
  const time_t t0 = time(NULL);
  zs_status rc = ZS_OK;
  for (int s = 0; rc == ZS_OK && time(NULL) - t0 < 600; s++) {
    rc = tm_step(e, u, s % 7);
    if (rc == ZS_OK && s % 5 == 4) rc = zs_engine_save(e, ck);
  }
  if (rc == ZS_OK) return 3;
  FILE *f = fopen(out, "w");
  if (f) {
    fprintf(f, "%s\n", zs_last_error());
    fclose(f);
  }
  zs_engine_destroy(e);
  (void)zs_test_failures;
  return 0; /* no zs_comm_destroy: MPI_Finalize would wait for the dead launcher */
}
