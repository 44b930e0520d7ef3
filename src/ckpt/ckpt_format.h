/* The checkpoint format (format version 2; version 1 is read too): what a checkpoint directory
 * holds and how its two kinds of files are encoded. Pure encoding and parsing, no engine: the fuzz
 * target drives the parsers directly.
 *
 * DIR/ckpt-<seq>/          one checkpoint; committed once manifest.json exists in it; seq is the
 *                          step count saved (zs_engine_steps_done), or one above the highest in
 *                          DIR when that is not lower: the newest checkpoint has the highest
 *   rank-<r>.zsd           what rank r wrote (every rank writes one file; r counts every rank
 *                          of the mesh: tp rank r % tp_size of data-parallel rank r / tp_size)
 *   manifest.json          written last by rank 0: its rename is the commit point
 *
 * Optimizer state is saved in the unit's canonical flat order (tensors back to back, no padding),
 * so it does not depend on the world size, shard group or stage that saved it: a segment is
 * elements [begin, end) of one unit's fp32 master, then each of the optimizer's state arrays over
 * the same range, in the order the manifest's "arrays" lists them ("master" first, then the
 * optimizer's state names). Version 1 had no list: its arrays are AdamW's master, exp_avg (m),
 * exp_avg_sq (v), and its data files' headers say version 1; nothing else differs.
 * Ranks that hold the same range (replicated optimizer state, hybrid replicas) split it, so
 * every element is written once and all ranks write about the same amount.
 *
 * With tensor parallelism (tp_size > 1, format version 4) a unit's flat order is that of one tp
 * rank's slices (each tensor's slice shape, by its layout "tp"), every segment names the tp rank
 * whose slices it holds, and the manifest's shapes are the whole tensors': a loader at another
 * tp size maps each of its elements through the whole tensor to the saved slice that holds it.
 *
 * Data file: a 64-byte header (little-endian: magic "ZSHARDCK", u32 version, u32 writer rank,
 * u64 data offset, u64 data bytes, u64 block bytes, u64 block count, u64 reserved, u64 xxh64 of
 * the first 56 header bytes followed by the block table), the block table (xxh64 of each
 * block_bytes block of the data, the last one shorter), zeros up to the data offset (data
 * version 3: the next multiple of ZS_CKPT_DATA_ALIGN, so that the data can be written with
 * O_DIRECT; versions 1 and 2 have none), then the data. A reader checks the header
 * against the manifest and every block it reads against the table. The manifest carries its own
 * xxh64 (of its text with the checksum's 16 hex digits written as zeros). */
#ifndef ZS_CKPT_CKPT_FORMAT_H
#define ZS_CKPT_CKPT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "base/opt_shape.h"
#include "zshard.h"

/* The manifest versions: 3 added units' own step counts (units[i].steps, after zs_unit_no_grad),
   4 tensor parallelism (tp_size, layouts, segments' tp ranks), 5 data files of data version 3
   (their data at an aligned offset), 6 segments with fewer arrays than the manifest's (their
   "narrays": a frozen unit's master alone, a unit whose optimizers keep fewer arrays). Every
   save writes the newest; the keys of 3, 4 and 6 only where they apply. */
#define ZS_CKPT_FORMAT_VERSION 6
#define ZS_CKPT_FORMAT_OLDEST 1 /* the oldest version this library reads */
#define ZS_CKPT_DATA_VERSION 3  /* the version in the data files' headers (1 and 2 read too) */
#define ZS_CKPT_DATA_ALIGN 4096 /* data version 3's data offset is a multiple of this */
/* The most arrays a segment holds: the master and the optimizer's state arrays. */
#define ZS_CKPT_MAX_ARRAYS (1 + ZS_OPT_MAX_STATE)
#define ZS_CKPT_MAGIC "ZSHARDCK"
#define ZS_CKPT_HEADER_BYTES 64
#define ZS_CKPT_MANIFEST "manifest.json"
#define ZS_CKPT_MAX_NAME 64

/* One run of a unit's state in a data file: elements [begin, end) of the master at byte `offset`
   of the data, then the next narrays - 1 arrays of the manifest in turn (each (end - begin) fp32
   values); a load reads the arrays past them as zeros. */
typedef struct {
  int unit;
  uint64_t begin, end, offset;
  int tp;      /* the tp rank whose slices it holds (key "tp"; 0 when tp_size is 1) */
  int narrays; /* 1 .. the manifest's (key "narrays", written when fewer; absent: the manifest's) */
} zs_ckpt_seg;

typedef struct {
  char name[32]; /* "rank-00003.zsd" */
  uint64_t bytes, data_bytes, nblocks;
  /* The header's own checksum (its last 8 bytes): it covers the block table, which covers every
     block of data, so it is the file's checksum. */
  uint64_t header_xxh64;
  int nsegs;
  zs_ckpt_seg *segs;
} zs_ckpt_file;

typedef struct {
  char name[ZS_CKPT_MAX_NAME];
  int ndim;
  int64_t shape[4]; /* the whole tensor's */
  int tp;           /* its zs_tp_layout when saved (key "tp", written when not replicated) */
  int no_weight_decay;
  int group; /* its parameter group (0: the configuration's; key "group", written when not 0) */
} zs_ckpt_tensor;

typedef struct {
  char name[ZS_CKPT_MAX_NAME];
  uint64_t numel; /* unpadded; with tp_size > 1 one tp rank's slices' */
  int64_t steps;  /* its optimizer steps where they are not the manifest's step (key "steps", after
                     zs_unit_no_grad); -1: the step */
  int ntensors;
  zs_ckpt_tensor *t;
} zs_ckpt_unit;

typedef struct {
  int format_version;
  char zshard_version[32];
  uint64_t seq;
  int64_t step;       /* completed optimizer steps (AdamW's t) */
  int64_t steps_done; /* completed zs_engine_step calls, skipped ones included */
  int world_size, shard_group_size, stage; /* of the data-parallel ranks */
  int tp_size; /* key "tp_size" (1 when absent): the files are world_size * tp_size ranks' */
  int shard_params, shard_grads, shard_optimizer; /* the plan's resolved switches */
  unsigned offload;
  zs_dtype param_dtype, reduce_dtype;
  int deterministic;
  char optimizer[16]; /* whose state the arrays after the master are; absent in the files before
                         the key (read as "adamw"); "" writes no key */
  int narrays;        /* arrays per segment: the master, then the optimizer's (version 1: 3) */
  char arrays[ZS_CKPT_MAX_ARRAYS][32]; /* their names ("master", "exp_avg", ...) */
  float lr, beta1, beta2, eps, weight_decay, max_grad_norm;
  /* The parameter groups after group 0 (key "groups", written when there are any): each one's
     lr_scale, weight_decay, beta1, beta2, eps and momentum, as zs_param_group. */
  int ngroups;                                /* 1 + the groups listed */
  zs_param_group groups[ZS_MAX_PARAM_GROUPS]; /* (their optimizer field unused here) */
  /* Each group's optimizer's name (key "optimizer"; "" when absent: the checkpoint's). */
  char group_optimizer[ZS_MAX_PARAM_GROUPS][16];
  /* The program's own blob (zs_engine_set_user_meta; key "user_meta", hex, written when any):
     owned by the manifest (malloc'd; zs_ckpt_manifest_free frees it). */
  unsigned char *user_meta;
  size_t user_meta_bytes;
  uint64_t block_bytes;
  int nunits;
  zs_ckpt_unit *units;
  int nfiles;
  zs_ckpt_file *files;
} zs_ckpt_manifest;

/* Elements of tensor t's slice (the whole tensor's when not split) at tp size T. */
uint64_t zs_ckpt_slice_numel(const zs_ckpt_tensor *t, int T);

/* The data file header, decoded. */
typedef struct {
  uint32_t version, rank;
  uint64_t data_offset, data_bytes, block_bytes, nblocks, self_xxh64;
} zs_ckpt_header;

void zs_ckpt_manifest_free(zs_ckpt_manifest *m);
/* The manifest as JSON text (malloc'd, NUL-terminated, its checksum filled in). */
zs_status zs_ckpt_manifest_write(const zs_ckpt_manifest *m, char **text);
/* Parses and checks manifest text of len bytes (need not be NUL-terminated): its checksum, the
   format, the version, every field's type and range, segments inside their files and units.
   ZS_ERR_CORRUPT (damage, unknown version) naming what is wrong; on success m is owned by the
   caller (zs_ckpt_manifest_free). */
zs_status zs_ckpt_manifest_parse(const char *text, size_t len, zs_ckpt_manifest *m);
/* The same without the checksum (the fuzz target reaches every field check through it). */
zs_status zs_ckpt_manifest_parse_json(const char *text, size_t len, zs_ckpt_manifest *m);

/* Where a data file's data begins: right after the block table (data versions 1 and 2), or there
   rounded up to ZS_CKPT_DATA_ALIGN (3). */
uint64_t zs_ckpt_data_offset(uint32_t data_version, uint64_t nblocks);
/* The data version of the files a manifest of format_version lists (3 from 5 on, else 2: 1 and 2
   place their data alike). */
uint32_t zs_ckpt_files_data_version(int format_version);
/* Blocks of data_bytes in block_bytes blocks. */
uint64_t zs_ckpt_nblocks(uint64_t data_bytes, uint64_t block_bytes);
/* Encodes the header (ZS_CKPT_HEADER_BYTES) with its checksum over itself and the block table
   (nblocks words, written right after it in the file); returns that checksum. */
uint64_t zs_ckpt_header_encode(unsigned char *out, uint32_t rank, uint64_t data_bytes,
                               uint64_t block_bytes, const uint64_t *table, uint64_t nblocks);
/* Decodes and checks a header followed by its block table (buf holds at least len bytes):
   magic, version, the checksum, that the table fits in len. ZS_ERR_CORRUPT naming the fault. */
zs_status zs_ckpt_header_parse(const unsigned char *buf, size_t len, zs_ckpt_header *h);

#endif
