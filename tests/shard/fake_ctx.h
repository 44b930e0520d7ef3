/* The owner's side of a hand-filled zs_shard_ctx in the shard unit tests: a real memory owner
 * (mem/mem.h) whose ledger tells the bytes outstanding (so a test sees scratch that was not
 * returned), and failures counted instead of failing an engine. The owner pointer is unused. */
#ifndef ZS_TESTS_SHARD_FAKE_CTX_H
#define ZS_TESTS_SHARD_FAKE_CTX_H

#include "base/error.h"
#include "device/device.h"
#include "mem/mem.h"
#include "shard/shard.h"

static zs_mem fake_mem;   /* zs_mem_init it on the test's device before use */
static int fake_failures; /* failures the shard layer reported */

/* Bytes allocated through the context and not freed. */
static inline size_t fake_live_bytes(void) {
  return fake_mem.ledger.total.cur;
}
static zs_status fake_fail(void *o, zs_status s) {
  (void)o;
  fake_failures++;
  return s;
}

#endif
