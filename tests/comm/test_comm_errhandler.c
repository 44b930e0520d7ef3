/* MPI_COMM_WORLD's error handler around zs_comm_init_mpi / zs_comm_destroy: MPI's default
 * (MPI_ERRORS_ARE_FATAL) is replaced by MPI_ERRORS_RETURN while any zshard comm lives and put back
 * by the last zs_comm_destroy; a handler the program installed itself is never touched. The
 * program initialises and finalises MPI itself, so the handler can be read after each destroy. */
#include <mpi.h>
#include <stdio.h>

#include "zs_test.h"

/* The program's own handler (never called here: nothing fails). */
static void mine(MPI_Comm *c, int *code, ...) {
  (void)c;
  (void)code;
}

/* 1 when MPI_COMM_WORLD's handler is h. */
static int world_has(MPI_Errhandler h) {
  MPI_Errhandler cur = MPI_ERRHANDLER_NULL;
  if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &cur) != MPI_SUCCESS) return 0;
  const int same = cur == h;
  MPI_Errhandler_free(&cur);
  return same;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ZS_EXPECT(world_has(MPI_ERRORS_ARE_FATAL), "MPI's default handler is not MPI_ERRORS_ARE_FATAL");
  /* Two comms: the default is replaced while either lives, and back after the last. */
  zs_comm *a = NULL, *b = NULL;
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &a));
  ZS_EXPECT(world_has(MPI_ERRORS_RETURN), "after init: not MPI_ERRORS_RETURN");
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &b));
  zs_comm_destroy(a);
  ZS_EXPECT(world_has(MPI_ERRORS_RETURN), "one comm still lives: not MPI_ERRORS_RETURN");
  zs_comm_destroy(b);
  ZS_EXPECT(world_has(MPI_ERRORS_ARE_FATAL), "after the last destroy: not MPI_ERRORS_ARE_FATAL");
  /* The program's own handler stays through init and destroy. */
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  MPI_Comm_create_errhandler(mine, &h);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, h);
  ZS_OK_OR_DIE(zs_comm_init_mpi(&argc, &argv, &a));
  ZS_EXPECT(world_has(h), "init replaced the program's own handler");
  zs_comm_destroy(a);
  ZS_EXPECT(world_has(h), "destroy replaced the program's own handler");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Errhandler_free(&h);
  MPI_Finalize();
  ZS_TEST_END("test_comm_errhandler");
}
