/* The engine's side of the flight recorder (comm/flight.h; docs/COLLECTIVES.md §8): the ring over
 * its groups, and the file a failed engine writes. */
#ifndef ZS_ENGINE_FLIGHT_DUMP_H
#define ZS_ENGINE_FLIGHT_DUMP_H

#include "engine/engine_internal.h"

/* Creates e's ring (flight_entries of them; none for 0) and records its groups into it, after
   the groups are open. ZS_ERR_OUT_OF_MEMORY. */
zs_status zs_engine_flight_open(zs_engine *e);
/* Once per engine, with flight_dir set: writes the ring to flight_dir/flight-rank<R>.json (the
   thread's last error as the reason) and appends "; flight record: PATH" to that error, or why it
   could not be written. Never fails and never changes the caller's status. */
void zs_engine_flight_dump(zs_engine *e);
/* Frees the ring (after the groups are destroyed). */
void zs_engine_flight_close(zs_engine *e);

#endif
