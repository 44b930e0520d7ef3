/* The owner's services for a hand-filled zs_shard_ctx in the shard unit tests: device memory with
 * a count of the bytes outstanding (so a test sees scratch that was not returned), and failures
 * counted instead of failing an engine. The owner pointer is the zs_dev. */
#ifndef ZS_TESTS_SHARD_FAKE_CTX_H
#define ZS_TESTS_SHARD_FAKE_CTX_H

#include "base/error.h"
#include "device/device.h"
#include "shard/shard.h"

static size_t fake_live_bytes; /* bytes allocated through the context and not freed */
static int fake_failures;      /* failures the shard layer reported */

static zs_status fake_alloc(void *o, zs_mem_cat c, size_t bytes, void **p, void *stream) {
  (void)c;
  ZS_CHECK(zs_dev_alloc(o, bytes, p, stream));
  fake_live_bytes += bytes;
  return ZS_OK;
}
static void fake_free(void *o, zs_mem_cat c, void *p, size_t bytes, void *stream) {
  (void)c;
  zs_dev_free(o, p, stream);
  fake_live_bytes -= bytes;
}
static zs_status fake_fail(void *o, zs_status s, int hard) {
  (void)o;
  (void)hard;
  fake_failures++;
  return s;
}

#endif
