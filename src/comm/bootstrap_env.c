/* zs_comm_init_env: the bootstrap from torchrun/Slurm/Kubernetes-style variables. Nothing talks to
 * a peer here; the TCP rendezvous happens when the first CUDA group is opened (nccl.c), so a CPU
 * job that was wrongly launched this way gets its ZS_ERR_UNSUPPORTED at once, not after a wait. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "comm/comm_impl.h"
#include "device/device.h"
#include "base/config.h"
#include "base/error.h"

/* Parses variable `name` as an integer in [lo, hi]; def >= lo is used when it is unset (def < lo:
   it is required). */
static zs_status env_int(const char *name, long lo, long hi, long def, int *out) {
  const char *s = zs_env(name);
  if (!s || !*s) {
    if (def >= lo) {
      *out = (int)def;
      return ZS_OK;
    }
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_comm_init_env: %s is not set: launch with torchrun or "
                  "set RANK, WORLD_SIZE (and MASTER_ADDR, MASTER_PORT when "
                  "WORLD_SIZE > 1), or use zs_comm_init_mpi under mpirun",
                  name);
  }
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  while (end && isspace((unsigned char)*end))
    end++;
  if (errno || end == s || !end || *end != '\0' || v < lo || v > hi)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_comm_init_env: %s=\"%s\" is not an integer in %ld..%ld: "
                  "fix the launcher's environment",
                  name, s, lo, hi);
  *out = (int)v;
  return ZS_OK;
}

/* Checks MASTER_ADDR resolves, so a typo fails here and not after the rendezvous timeout. */
static zs_status check_addr(const char *addr) {
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int r = getaddrinfo(addr, NULL, &hints, &res);
  if (r != 0)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_comm_init_env: MASTER_ADDR=\"%s\" does not resolve (%s): "
                  "set it to rank 0's host name or IP address",
                  addr, gai_strerror(r));
  freeaddrinfo(res);
  return ZS_OK;
}

/* Reads the variables (see zshard.h); no network traffic. */
zs_status zs_comm_init_env(zs_comm **out) {
  int rank = 0, size = 0, lrank = 0, port = 0;
  if (!out) return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_init_env: out must not be NULL");
  *out = NULL;
  ZS_CHECK(env_int("WORLD_SIZE", 1, INT_MAX, -1, &size));
  ZS_CHECK(env_int("RANK", 0, INT_MAX, -1, &rank));
  if (rank >= size)
    return zs_err(ZS_ERR_INVALID_ARG,
                  "zs_comm_init_env: RANK=%d is not below WORLD_SIZE=%d: "
                  "ranks are 0..WORLD_SIZE-1",
                  rank, size);
  ZS_CHECK(env_int("LOCAL_RANK", 0, INT_MAX, 0, &lrank));
  const char *addr = zs_env("MASTER_ADDR");
  if (size > 1) {
    if (!addr || !*addr)
      return zs_err(ZS_ERR_INVALID_ARG,
                    "zs_comm_init_env: MASTER_ADDR is not set but "
                    "WORLD_SIZE=%d: set it to rank 0's host",
                    size);
    if (strlen(addr) >= sizeof(((zs_comm_impl *)0)->master_addr))
      return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_init_env: MASTER_ADDR is longer than 255 "
                                        "characters: use a shorter host name or an IP address");
    ZS_CHECK(env_int("MASTER_PORT", 1, 65535, -1, &port));
    ZS_CHECK(check_addr(addr));
  }
  if (size > 1 && zs_dev_cuda_count() == 0)
    return zs_err(ZS_ERR_UNSUPPORTED,
                  "zs_comm_init_env: WORLD_SIZE=%d but no CUDA device is visible, so these ranks "
                  "can only use the CPU device, which needs MPI between processes: launch with "
                  "mpirun and use zs_comm_init_mpi",
                  size);
  /* LOCAL_WORLD_SIZE is torchrun's name for the ranks on this host (default 1). */
  int lsize = 1;
  ZS_CHECK(env_int("LOCAL_WORLD_SIZE", 1, INT_MAX, 1, &lsize));
  return zs_comm_env_make(rank, size, lrank, lsize, size > 1 ? addr : NULL, port, out);
}

/* The communicator itself (see comm.h). */
zs_status zs_comm_env_make(int rank, int size, int lrank, int lsize, const char *addr, int port,
                           zs_comm **out) {
  zs_status rc = ZS_OK;
  if (!out || size < 1 || rank < 0 || rank >= size || (size > 1 && !addr))
    return zs_err(ZS_ERR_INVALID_ARG, "zs_comm_env_make: bad arguments (rank %d, size %d)", rank,
                  size);
  *out = NULL;
  zs_comm *c = calloc(1, sizeof *c);
  zs_comm_impl *ci = calloc(1, sizeof *ci);
  if (!c || !ci) {
    rc = zs_err(ZS_ERR_OUT_OF_MEMORY, "out of host memory creating the communicator");
    free(c);
    free(ci);
    return rc;
  }
  ci->world = MPI_COMM_NULL;
  ci->bf16_type = MPI_DATATYPE_NULL;
  ci->bf16_sum = MPI_OP_NULL;
  if (size > 1) snprintf(ci->master_addr, sizeof ci->master_addr, "%s", addr);
  ci->master_port = port;
  ci->boot_timeout_s = zs_boot_timeout_default();
  c->rank = rank;
  c->size = size;
  c->local_rank = lrank;
  c->local_size = lsize;
  c->from_env = 1;
  c->impl = ci;
  *out = c;
  return ZS_OK;
}
