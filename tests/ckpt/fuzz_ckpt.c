/* libFuzzer target for the two parsers that read checkpoint bytes from disk: the manifest (JSON,
 * every field checked) and the data file header with its block table. The first input byte picks
 * the parser; the rest is the file. The harness fixes up the checksums (the manifest's is skipped
 * through zs_ckpt_manifest_parse_json, the header's is recomputed) so the fuzzer reaches the
 * checks behind them. A manifest that parses must write out and parse back to the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "ckpt/ckpt_format.h"

static void fuzz_manifest(const char *text, size_t len) {
  zs_ckpt_manifest m, again;
  zs_ckpt_manifest_parse(text, len, &m); /* with its checksum: must simply refuse */
  zs_ckpt_manifest_free(&m);
  if (zs_ckpt_manifest_parse_json(text, len, &m) != ZS_OK) return;
  char *out = NULL, *out2 = NULL;
  if (zs_ckpt_manifest_write(&m, &out) == ZS_OK) {
    /* What it writes, it reads (checksum included), and writes the same again. */
    if (zs_ckpt_manifest_parse(out, strlen(out), &again) != ZS_OK) abort();
    if (zs_ckpt_manifest_write(&again, &out2) != ZS_OK || strcmp(out, out2) != 0) abort();
    zs_ckpt_manifest_free(&again);
  }
  free(out);
  free(out2);
  zs_ckpt_manifest_free(&m);
}

static void fuzz_header(const unsigned char *buf, size_t len) {
  unsigned char *b = malloc(len + 1);
  memcpy(b, buf, len);
  if (len >= ZS_CKPT_HEADER_BYTES) {
    uint64_t nb = 0;
    for (int i = 7; i >= 0; i--)
      nb = nb << 8 | b[40 + i];
    const uint64_t room = (len - ZS_CKPT_HEADER_BYTES) / 8;
    if (nb <= room) {
      XXH64_state_t *st = XXH64_createState();
      XXH64_reset(st, 0);
      XXH64_update(st, b, 56);
      XXH64_update(st, b + ZS_CKPT_HEADER_BYTES, (size_t)nb * 8);
      uint64_t h = XXH64_digest(st);
      XXH64_freeState(st);
      for (int i = 0; i < 8; i++)
        b[56 + i] = (unsigned char)(h >> (8 * i));
    }
  }
  zs_ckpt_header h;
  zs_ckpt_header_parse(b, len, &h);
  free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 1)
    fuzz_manifest((const char *)data + 1, size - 1);
  else
    fuzz_header(data + 1, size - 1);
  return 0;
}
