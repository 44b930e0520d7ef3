/* The engine's failure service: where a public call learns that it failed, it marks the engine
 * failed once, through zs_engine_fail or zs_engine_fail_hard, which both end in
 * zs_engine_abort_comms. Below every other file of the engine, which all report through it. */
#ifndef ZS_ENGINE_FAIL_H
#define ZS_ENGINE_FAIL_H

#include "zshard.h"

/* A failure the engine cannot undo (a half-done reduction or update, a gather its peers went on
   with): marks the engine failed (zs_engine_abort_comms). Returns s. */
zs_status zs_engine_fail_hard(zs_engine *e, zs_status s);
/* A timeout, transport or device error (of a collective or a wait behind one,
   zs_mem_may_be_written) marks the engine failed (zs_engine_abort_comms); other statuses pass
   through. Returns s. */
zs_status zs_engine_fail(zs_engine *e, zs_status s);
/* The failure boundary, the one function that marks the engine failed: later calls return
   ZS_ERR_STATE, its collective groups are aborted (kernels waiting for a silent peer exit,
   destroy cannot hang), and its memory owner defers every free from now on (an abandoned
   collective may still write into the buffers) until destroy has torn the groups down.
   Idempotent. */
void zs_engine_abort_comms(zs_engine *e);

#endif
