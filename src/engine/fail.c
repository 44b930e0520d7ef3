/* The engine's failure service (fail.h): marking the engine failed, once. */
#include "engine/fail.h"

#include "base/error.h"
#include "engine/engine_internal.h"
#include "engine/flight_dump.h"

zs_status zs_engine_fail_hard(zs_engine *e, zs_status s) {
  if (s != ZS_OK) zs_engine_abort_comms(e);
  return s;
}

zs_status zs_engine_fail(zs_engine *e, zs_status s) {
  /* A collective or a wait behind one failed (timeout, transport, device): peers may be inside
     an operation this rank left. Abort every group so that their kernels exit and destroy
     cannot hang, and refuse further steps. */
  if (zs_mem_may_be_written(s)) zs_engine_abort_comms(e);
  return s;
}

zs_status zs_engine_abort(zs_engine *e) {
  if (!e) return zs_err(ZS_ERR_INVALID_ARG, "zs_engine_abort: engine is NULL");
  e->aborted = 1; /* destroy's goodbye tells the peers that this was zs_engine_abort */
  zs_engine_abort_comms(e);
  return ZS_OK;
}

void zs_engine_abort_comms(zs_engine *e) {
  e->state = ZS_ENGINE_FAILED;
  zs_mem_break(&e->mem); /* before any free that follows: frees are deferred from now on */
  e->sh.in_step = 0;     /* the shard layer never sees a failed engine as inside a step */
  zs_coll_abort(e->replica);
  if (e->shard != e->world) zs_coll_abort(e->shard);
  if (e->world != e->all) zs_coll_abort(e->world);
  zs_coll_abort(e->tp);
  zs_coll_abort(e->all);
  zs_engine_flight_dump(e); /* after the aborts (a slow disk cannot hold the peers); the ring is
                               as the failure left it */
}
