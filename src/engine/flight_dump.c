/* The engine's flight record (flight_dump.h): one JSON file per rank, written when the engine
 * fails. The format (docs/COLLECTIVES.md §8) is what tools/zshard-flight reads. */
#include "engine/flight_dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "base/error.h"
#include "comm/flight.h"

zs_status zs_engine_flight_open(zs_engine *e) {
  if (e->cfg.flight_entries <= 0 || !e->cfg.flight_dir) return ZS_OK; /* nobody would read it */
  ZS_CHECK(zs_flight_create((size_t)e->cfg.flight_entries, &e->flight));
  /* Each group's rank i is world rank first + i * stride (the mesh: data-parallel rank r is
     rank r * tp_size + tp_rank). */
  const int g = e->shard_size, T = e->tp_size, q = e->tp_rank;
  if (e->tp) {
    zs_coll_set_flight(e->all, e->flight, "all", 0, 1);
    zs_coll_set_flight(e->tp, e->flight, "tp", e->all_rank / T * T, 1);
  }
  zs_coll_set_flight(e->world, e->flight, e->tp ? "dp" : "world", q, T);
  if (e->shard != e->world) {
    zs_coll_set_flight(e->shard, e->flight, "shard", e->world_rank / g * g * T + q, T);
    zs_coll_set_flight(e->replica, e->flight, "replica", e->world_rank % g * T + q, g * T);
  }
  return ZS_OK;
}

void zs_engine_flight_close(zs_engine *e) {
  zs_flight_destroy(e->flight);
  e->flight = NULL;
}

/* The record as JSON text (malloc'd), or NULL without memory. */
static char *render(const zs_engine *e, const char *reason) {
  const zs_flight *f = e->flight;
  cJSON *root = cJSON_CreateObject();
  if (!root) return NULL;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  cJSON_AddStringToObject(root, "format", "zshard-flight");
  cJSON_AddNumberToObject(root, "version", 1);
  cJSON_AddNumberToObject(root, "rank", e->all_rank);
  cJSON_AddNumberToObject(root, "world_size", e->all_size);
  cJSON_AddNumberToObject(root, "tp_size", e->tp_size);
  cJSON_AddStringToObject(root, "host", host);
  cJSON_AddNumberToObject(root, "pid", (double)getpid());
  cJSON_AddNumberToObject(root, "written_us", (double)zs_clock_wall_us());
  cJSON_AddNumberToObject(root, "timeout_s", e->cfg.comm_timeout_s);
  cJSON_AddStringToObject(root, "reason", reason);
  cJSON_AddNumberToObject(root, "recorded", (double)f->n);
  cJSON *groups = cJSON_AddArrayToObject(root, "groups");
  for (int g = 0; groups && g < f->ngroups; g++) {
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddItemToArray(groups, o);
    cJSON_AddStringToObject(o, "name", f->group_name[g]);
    cJSON_AddNumberToObject(o, "rank", f->group_rank[g]);
    cJSON_AddNumberToObject(o, "size", f->group_size[g]);
    cJSON *m = cJSON_AddArrayToObject(o, "members");
    for (int k = 0; m && k < f->group_size[g]; k++)
      cJSON_AddItemToArray(m, cJSON_CreateNumber(f->group_first[g] + k * f->group_stride[g]));
  }
  cJSON *entries = cJSON_AddArrayToObject(root, "entries");
  for (size_t i = 0; entries && i < zs_flight_held(f); i++) {
    const zs_flight_entry *x = zs_flight_at(f, i);
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddItemToArray(entries, o);
    char call[256] = "";
    if (e->sig.describe) e->sig.describe(e, x->ctx, call, sizeof call);
    cJSON_AddNumberToObject(o, "seq", (double)x->seq);
    cJSON_AddStringToObject(o, "group", f->group_name[x->group]);
    cJSON_AddStringToObject(o, "op", zs_flight_op_name(x->op));
    cJSON_AddStringToObject(o, "state", zs_flight_state_name(x->state));
    if (x->state == ZS_FLIGHT_FAILED)
      cJSON_AddStringToObject(o, "status", zs_status_str((zs_status)x->status));
    cJSON_AddStringToObject(o, "call", call);
    cJSON_AddNumberToObject(o, "count", (double)x->count);
    cJSON_AddNumberToObject(o, "bytes", (double)x->bytes);
    cJSON_AddNumberToObject(o, "called_us", (double)x->called_us);
    cJSON_AddNumberToObject(o, "started_us", (double)x->started_us);
    cJSON_AddNumberToObject(o, "ended_us", (double)x->ended_us);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  return text;
}

/* Writes text to path through path.tmp and a rename: a reader sees the whole file or none. */
static int write_file(const char *path, const char *text, char *why, size_t len) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  if (!fp) {
    snprintf(why, len, "cannot create %s (%s)", tmp, strerror(errno));
    return 0;
  }
  const size_t n = strlen(text);
  const int ok = fwrite(text, 1, n, fp) == n && fputc('\n', fp) != EOF;
  if (fclose(fp) != 0 || !ok || rename(tmp, path) != 0) {
    snprintf(why, len, "cannot write %s (%s)", path, strerror(errno));
    unlink(tmp);
    return 0;
  }
  return 1;
}

void zs_engine_flight_dump(zs_engine *e) {
  if (!e || !e->flight || !e->cfg.flight_dir || e->flight_written) return;
  e->flight_written = 1;
  char reason[1024];
  snprintf(reason, sizeof reason, "%s",
           e->aborted ? "zs_engine_abort was called" : zs_last_error());
  char path[4096], why[4400] = "";
  if (snprintf(path, sizeof path, "%s/flight-rank%d.json", e->cfg.flight_dir, e->all_rank) >=
      (int)sizeof path)
    snprintf(why, sizeof why, "flight_dir is longer than %zu characters", sizeof path - 32);
  else if (mkdir(e->cfg.flight_dir, 0777) != 0 && errno != EEXIST)
    snprintf(why, sizeof why, "cannot create %s (%s)", e->cfg.flight_dir, strerror(errno));
  char *text = why[0] ? NULL : render(e, reason);
  if (!why[0] && !text) snprintf(why, sizeof why, "no memory for it");
  const int ok = text && write_file(path, text, why, sizeof why);
  free(text);
  if (e->aborted) return; /* zs_engine_abort returns ZS_OK: no error to add to */
  /* The reason stays first (at least 600 characters of it); the file, or why there is none, goes
     at its end. */
  const char *tail = ok ? path : why;
  const size_t tl = strlen(tail), room = tl + 40 < 400 ? 1000 - tl - 40 : 600;
  (void)zs_err(ZS_OK, "%.*s; %s: %.*s", (int)room, reason,
               ok ? "flight record" : "no flight record", 380, tail);
}
