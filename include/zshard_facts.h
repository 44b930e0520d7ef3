/* zshard_facts.h — what an engine is and where commit put its state, as numbers a program reads
 * (zs_engine_info says the same in one human line, written from these numbers).
 *
 * What the configuration already says is not repeated here: zs_engine_config gives the resolved
 * configuration (stage, device and device_index, param/reduce dtype, master, moment_dtype, the
 * tunables), zs_config_origin where each tunable's value came from. Include this header after, or
 * instead of, zshard.h (it includes zshard.h); it is installed beside it. The conventions of
 * zshard.h hold (errors, threads, ownership).
 */
#ifndef ZSHARD_FACTS_H
#define ZSHARD_FACTS_H

#include "zshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a tunable's value in zs_engine_config came from (zs_config_origin). */
typedef enum {
  ZS_ORIGIN_DEFAULT = 0, /* left unset in the program's zs_config and no variable: the default */
  ZS_ORIGIN_PROGRAM = 1, /* set in the zs_config given to zs_engine_create (wins over a variable) */
  ZS_ORIGIN_ENV = 2      /* left unset, taken from its environment variable (README lists them) */
} zs_origin;

/* The struct_version zs_engine_facts_get writes: which fields it filled. */
#define ZS_ENGINE_FACTS_VERSION 2

/* An engine's facts (zs_engine_facts_get). Its size never changes within a major version: a
   later minor version adds fields in the reserved room and says so in struct_version. Fields
   that do not apply (no offload, no budget, no tier, before commit) are 0 (nvme_dir NULL). */
typedef struct {
  size_t struct_size;      /* set by the caller: sizeof(zs_engine_facts), e.g.
                              zs_engine_facts f = {.struct_size = sizeof f}; */
  unsigned struct_version; /* set by zs_engine_facts_get: ZS_ENGINE_FACTS_VERSION of the library,
                              1: the fields below up to nvme_io_seconds; 2: also comm_bus_bytes
                              and comm_tp_bus_bytes */
  int committed;           /* 1 once zs_engine_commit succeeded: the placement fields are set */
  char comm[16];           /* the world group's collective backend: "mpi", "mpi-staged", "nccl" or
                              "self" (NUL-terminated) */
  /* The data-parallel ranks: the comm's, over tp_size (docs/PARALLEL.md). */
  int world_size, world_rank;
  int shard_group_size, shard_rank; /* the shard group (world_size without hybrid sharding) and
                                       this rank's place in it */
  int sharded_params, sharded_grads, sharded_optimizer; /* 1 where that state is sharded over the
                                                           shard group (the plan, not the stage) */
  /* The host tier (zs_config.offload or an offload budget; 0 without, host_numa_node -1). */
  int host_arena;      /* 1: the engine has a host arena for offloaded state */
  int host_pinned;     /* 1: its memory is page-locked; 0: unpinned (offload_allow_unpinned) */
  int host_numa_node;  /* the arena's NUMA node, -1 without one or when not NUMA-bound */
  int offload_workers; /* threads of the offload optimizer's pool (0: none) */
  int cpu_workers;     /* threads of the CPU device's optimizer pool (ZS_ADAMW_THREADS; 0: none) */
  /* The offload budget's placement (docs/MEMORY.md §6), after commit; 0 without a budget. */
  int budget_active;     /* 1: an offload budget placed the units */
  int budget_free_ranks; /* ZS_BUDGET_FREE: the budget is the least free memory over this many
                            ranks, measured at commit (0: a budget the program or variable gave) */
  size_t budget_bytes;   /* the budget (as zs_engine_config's offload_budget_bytes after commit) */
  size_t device_bytes;   /* device bytes under the placement (persistent state + buffer bound) */
  int units;             /* units of the engine (zs_engine_num_units) */
  int units_on_host;     /* units the budget put on the host (zs_unit_placed says which) */
  /* The NVMe tier (zs_config.nvme_path, docs/MEMORY.md §7), after commit; 0 without it. */
  int nvme;                 /* 1: nvme_path is set: the tier's placement below was computed */
  int nvme_units;           /* units whose optimizer state is on the tier (0: the tier is unused) */
  size_t nvme_disk_bytes;   /* bytes of optimizer state in the tier's files */
  size_t nvme_host_bytes;   /* host bytes (host_pinned) under the placement, the tier's staging
                               included */
  size_t nvme_host_cap;     /* the cap they are placed under (zs_config.offload_host_bytes) */
  const char *nvme_dir;     /* this rank's tier directory (owned by the engine, removed by
                               zs_engine_destroy); NULL with no unit on the tier */
  uint64_t nvme_file_bytes; /* bytes the tier's files reserve on disk (their aligned sizes) */
  size_t nvme_chunk;        /* elements per chunk of the tier's stream */
  uint64_t nvme_read_bytes, nvme_written_bytes; /* the steps' tier I/O since commit: bytes read and
                                                   bytes written */
  double nvme_io_seconds; /* wall seconds of the steps' tier passes (I/O and updates overlapped) */
  /* Communication since create, in bytes this rank's collectives move on a ring (nccl-tests'
     bus bytes: an all-reduce of B bytes over n ranks 2 B (n - 1) / n): every group's, and of
     them the tp group's (the model's zs_engine_all_reduce and the like, the partial sums). */
  uint64_t comm_bus_bytes, comm_tp_bus_bytes;
  uint64_t reserved[14]; /* room for later fields; written as 0 */
} zs_engine_facts;

/* Fills *out with e's facts now (the placement after commit, the tier's I/O after each step).
   out->struct_size must be set, at least sizeof(zs_engine_facts) of this header (bytes past it
   are zeroed). ZS_ERR_INVALID_ARG for NULL or a smaller struct_size (out untouched). Not
   collective; any engine state, a failed one too. */
ZS_API zs_status zs_engine_facts_get(const zs_engine *e, zs_engine_facts *out);

/* Where tunable `field` (a zs_config field name: "prefetch_units", "stage", "nvme_path", ...; the
   fields an environment variable may set) got its value in zs_engine_config(e). ZS_ERR_INVALID_ARG
   for NULL or a name that is not such a field (*out untouched). Not collective. */
ZS_API zs_status zs_config_origin(const zs_engine *e, const char *field, zs_origin *out);

/* Where commit put unit u: *on_host 1 when the offload budget placed it on the host (its
   optimizer state, and with sharded params its param shard), *on_nvme 1 when its optimizer state
   is on the NVMe tier (either may be NULL). ZS_ERR_INVALID_ARG for NULL u, ZS_ERR_STATE before
   zs_engine_commit. Not collective. */
ZS_API zs_status zs_unit_placed(const zs_unit *u, int *on_host, int *on_nvme);

#ifdef __cplusplus
}
#endif

#endif /* ZSHARD_FACTS_H */
