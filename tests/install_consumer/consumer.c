/* A program outside the zshard tree: it sees only the installed zshard.h and libzshard, found
 * through pkg-config or find_package(zshard) (tests/test_install.sh builds it both ways). It checks
 * the basics a consumer relies on and exits 0 when they hold. */
#include <stdio.h>
#include <string.h>

#include <zshard.h>

/* Reports a failed expectation and counts it. */
static int check(int ok, const char *what, int *failures) {
  if (!ok) {
    fprintf(stderr, "consumer: FAILED: %s (last error: %s)\n", what, zs_last_error());
    (*failures)++;
  }
  return ok;
}

int main(int argc, char **argv) {
  int failures = 0;
  zs_config cfg;
  zs_config_default(&cfg);
  check(cfg.stage >= 0 && cfg.stage <= 3, "zs_config_default sets a stage in 0..3", &failures);
  check(!strcmp(zs_status_str(ZS_OK), "ZS_OK"), "zs_status_str(ZS_OK) is \"ZS_OK\"", &failures);
  check(!strcmp(zs_status_str(ZS_ERR_TIMEOUT), "ZS_ERR_TIMEOUT"), "zs_status_str(ZS_ERR_TIMEOUT)",
        &failures);

  zs_comm *comm = NULL;
  zs_engine *e = NULL;
  if (!check(zs_comm_init_mpi(&argc, &argv, &comm) == ZS_OK, "zs_comm_init_mpi", &failures))
    return 1;
  check(zs_comm_size(comm) >= 1 && zs_comm_rank(comm) >= 0, "comm rank/size", &failures);

  cfg.device = ZS_DEVICE_CPU;
  if (check(zs_engine_create(&cfg, comm, &e) == ZS_OK && e, "zs_engine_create", &failures))
    zs_engine_destroy(e);

  /* An invalid config is refused with a message, and no engine comes back. */
  zs_engine *bad = NULL;
  zs_config wrong = cfg;
  wrong.stage = 7;
  zs_status rc = zs_engine_create(&wrong, comm, &bad);
  check(rc == ZS_ERR_INVALID_ARG, "stage 7 is refused with ZS_ERR_INVALID_ARG", &failures);
  check(bad == NULL, "no engine for an invalid config", &failures);
  check(zs_last_error()[0] != '\0', "the refusal leaves a message", &failures);
  if (bad) zs_engine_destroy(bad);

  zs_comm_destroy(comm);
  printf("consumer: zshard %d.%d.%d, %s\n", ZSHARD_VERSION_MAJOR, ZSHARD_VERSION_MINOR,
         ZSHARD_VERSION_PATCH, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
