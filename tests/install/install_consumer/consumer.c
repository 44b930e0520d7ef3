/* A program outside the zshard tree: it sees only the installed headers and libraries (zshard,
 * zshard_kernels), found through pkg-config or find_package(zshard) (tests/install/test_install.sh
 * builds it both ways). It checks the basics a consumer relies on and exits 0 when they hold. */
#include <stdio.h>
#include <string.h>

#include <zshard_facts.h>
#include <zshard_kernels.h>

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
  check(cfg.stage == ZS_UNSET && cfg.struct_size == sizeof cfg,
        "zs_config_default leaves the stage unset (the environment or the default fills it)",
        &failures);
  check(!strcmp(zs_status_str(ZS_OK), "ZS_OK"), "zs_status_str(ZS_OK) is \"ZS_OK\"", &failures);
  check(!strcmp(zs_status_str(ZS_ERR_TIMEOUT), "ZS_ERR_TIMEOUT"), "zs_status_str(ZS_ERR_TIMEOUT)",
        &failures);

  zs_comm *comm = NULL;
  zs_engine *e = NULL;
  if (!check(zs_comm_init_mpi(&argc, &argv, &comm) == ZS_OK, "zs_comm_init_mpi", &failures))
    return 1;
  check(zs_comm_size(comm) >= 1 && zs_comm_rank(comm) >= 0, "comm rank/size", &failures);

  cfg.device = ZS_DEVICE_CPU;
  if (check(zs_engine_create(&cfg, comm, &e) == ZS_OK && e, "zs_engine_create", &failures)) {
    const zs_config *r = zs_engine_config(e);
    check(r && r->stage >= 0 && r->stage <= 3, "the engine resolved the stage to 0..3", &failures);
    zs_engine_facts f = {.struct_size = sizeof f};
    check(zs_engine_facts_get(e, &f) == ZS_OK && f.struct_version >= 1 &&
              f.world_size == zs_comm_size(comm) && strstr(zs_engine_info(e), f.comm),
          "zs_engine_facts_get (the installed zshard_facts.h) agrees with zs_engine_info",
          &failures);
    zs_engine_destroy(e);
  }

  /* An invalid config is refused with a message, and no engine comes back. */
  zs_engine *bad = NULL;
  zs_config wrong = cfg;
  wrong.stage = 7;
  zs_status rc = zs_engine_create(&wrong, comm, &bad);
  check(rc == ZS_ERR_INVALID_ARG, "stage 7 is refused with ZS_ERR_INVALID_ARG", &failures);
  check(bad == NULL, "no engine for an invalid config", &failures);
  check(zs_last_error()[0] != '\0', "the refusal leaves a message", &failures);
  if (bad) zs_engine_destroy(bad);

  /* The kernels library: GELU of 0 is 0, of a large x is x. */
  zs_kernels *k = NULL;
  if (check(zs_k_create(ZS_DEVICE_CPU, ZS_F32, NULL, &k) == ZS_OK, "zs_k_create", &failures)) {
    float in[2] = {0.0f, 30.0f}, out[2] = {-1.0f, -1.0f};
    check(zs_k_gelu_fwd(k, out, in, 2) == ZS_OK && out[0] == 0.0f && out[1] == 30.0f,
          "zs_k_gelu_fwd", &failures);
    check(zs_k_gelu_fwd(NULL, out, in, 2) == ZS_ERR_INVALID_ARG && zs_last_error()[0],
          "a kernels error reaches zs_last_error", &failures);
    zs_k_destroy(k);
  }

  zs_comm_destroy(comm);
  check(!strcmp(zs_version(), ZSHARD_VERSION_STRING), "the loaded library is the headers' version",
        &failures);
  printf("consumer: zshard %s, %s\n", zs_version(), failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
