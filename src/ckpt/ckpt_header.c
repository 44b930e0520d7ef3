/* The checkpoint data file's header and block table (see ckpt_format.h for the layout). */
#include <inttypes.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t on the stack */
#include <xxhash.h>

#include "base/error.h"
#include "ckpt/ckpt_format.h"

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

uint64_t zs_ckpt_data_offset(uint32_t data_version, uint64_t nblocks) {
  const uint64_t end = ZS_CKPT_HEADER_BYTES + 8 * nblocks;
  return data_version >= 3
             ? (end + ZS_CKPT_DATA_ALIGN - 1) / ZS_CKPT_DATA_ALIGN * ZS_CKPT_DATA_ALIGN
             : end;
}

uint32_t zs_ckpt_files_data_version(int format_version) {
  return format_version >= 5 ? 3 : 2;
}

uint64_t zs_ckpt_nblocks(uint64_t data_bytes, uint64_t block_bytes) {
  return block_bytes ? (data_bytes + block_bytes - 1) / block_bytes : 0;
}

/* xxh64 of the first 56 header bytes followed by the table (as little-endian words). */
static uint64_t self_hash(const unsigned char *head, const unsigned char *table, uint64_t nblocks) {
  XXH64_state_t st;
  XXH64_reset(&st, 0);
  XXH64_update(&st, head, 56);
  XXH64_update(&st, table, (size_t)nblocks * 8);
  return XXH64_digest(&st);
}

uint64_t zs_ckpt_header_encode(unsigned char *out, uint32_t rank, uint64_t data_bytes,
                               uint64_t block_bytes, const uint64_t *table, uint64_t nblocks) {
  memset(out, 0, ZS_CKPT_HEADER_BYTES);
  memcpy(out, ZS_CKPT_MAGIC, 8);
  put_u32(out + 8, ZS_CKPT_DATA_VERSION);
  put_u32(out + 12, rank);
  put_u64(out + 16, zs_ckpt_data_offset(ZS_CKPT_DATA_VERSION, nblocks));
  put_u64(out + 24, data_bytes);
  put_u64(out + 32, block_bytes);
  put_u64(out + 40, nblocks);
  /* The table goes to disk little-endian: encode it in place (a no-op on little-endian hosts). */
  unsigned char *t = (unsigned char *)table;
  for (uint64_t i = 0; i < nblocks; i++) {
    const uint64_t v = table[i];
    put_u64(t + 8 * i, v);
  }
  const uint64_t h = self_hash(out, t, nblocks);
  put_u64(out + 56, h);
  return h;
}

zs_status zs_ckpt_header_parse(const unsigned char *buf, size_t len, zs_ckpt_header *h) {
  memset(h, 0, sizeof *h);
  if (len < ZS_CKPT_HEADER_BYTES)
    return zs_err(ZS_ERR_CORRUPT, "checkpoint file: %zu bytes, shorter than its header", len);
  if (memcmp(buf, ZS_CKPT_MAGIC, 8) != 0)
    return zs_err(ZS_ERR_CORRUPT, "checkpoint file: bad magic (not a zshard checkpoint file)");
  h->version = get_u32(buf + 8);
  h->rank = get_u32(buf + 12);
  h->data_offset = get_u64(buf + 16);
  h->data_bytes = get_u64(buf + 24);
  h->block_bytes = get_u64(buf + 32);
  h->nblocks = get_u64(buf + 40);
  h->self_xxh64 = get_u64(buf + 56);
  if (h->version < ZS_CKPT_FORMAT_OLDEST || h->version > ZS_CKPT_DATA_VERSION)
    return zs_err(ZS_ERR_CORRUPT,
                  "checkpoint file: unknown format version %" PRIu32
                  " (this library reads %d to %d)",
                  h->version, ZS_CKPT_FORMAT_OLDEST, ZS_CKPT_DATA_VERSION);
  if (h->block_bytes == 0 || h->nblocks != zs_ckpt_nblocks(h->data_bytes, h->block_bytes) ||
      h->nblocks > (len - ZS_CKPT_HEADER_BYTES) / 8 ||
      h->data_offset != zs_ckpt_data_offset(h->version, h->nblocks))
    return zs_err(ZS_ERR_CORRUPT,
                  "checkpoint file: header fields are inconsistent (%" PRIu64 " blocks of %" PRIu64
                  " bytes for %" PRIu64 " data bytes)",
                  h->nblocks, h->block_bytes, h->data_bytes);
  const uint64_t got = self_hash(buf, buf + ZS_CKPT_HEADER_BYTES, h->nblocks);
  if (got != h->self_xxh64)
    return zs_err(ZS_ERR_CORRUPT, "checkpoint file: header checksum mismatch (damaged)");
  return ZS_OK;
}
