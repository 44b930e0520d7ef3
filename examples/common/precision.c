/* The examples' precision flags (see precision.h). */
#include "precision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* --master names -> zs_config.master. One row per mode the library has (docs/OPTIMIZER.md
   §4); the usage line and the error message list the rows. */
static const struct {
  const char *name;
  int master;
} master_modes[] = {
    {"fp32", ZS_MASTER_FP32},           /* an fp32 master copy beside the params (the default) */
    {"params", ZS_MASTER_PARAMS},       /* the fp32 params are the master (needs --dtype fp32) */
    {"remainder", ZS_MASTER_REMAINDER}, /* bf16 params + 16-bit remainder (needs --dtype bf16) */
    {"lean", ZS_MASTER_LEAN}            /* the bf16 params are the master (needs --dtype bf16) */
};
#define N_MASTER_MODES (sizeof master_modes / sizeof master_modes[0])

int gpt2_parse_master(const char *name, int *master) {
  char names[256] = "";
  for (size_t i = 0; i < N_MASTER_MODES; i++) {
    if (strcmp(name, master_modes[i].name) == 0) return *master = master_modes[i].master, 0;
    size_t len = strlen(names);
    snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", master_modes[i].name);
  }
  return gpt2_fail("--master is one of %s, not '%s'", names, name);
}

const char *gpt2_master_name(int master) {
  for (size_t i = 0; i < N_MASTER_MODES; i++)
    if (master_modes[i].master == master) return master_modes[i].name;
  return "?";
}

int gpt2_precision_check(int master, zs_dtype param_dtype) {
  if (master == ZS_MASTER_LEAN && param_dtype != ZS_BF16)
    return gpt2_fail("--master lean needs --dtype bf16: the bf16 params are the master (use "
                     "--master params to drop the fp32 copy of fp32 params)");
  if (master == ZS_MASTER_REMAINDER && param_dtype != ZS_BF16)
    return gpt2_fail("--master remainder needs --dtype bf16: a 16-bit remainder completes the bf16 "
                     "params to the fp32 master (use --master params for fp32 params)");
  return 0;
}

int gpt2_parse_moment_dtype(const char *name, zs_dtype *dt) {
  if (!strcmp(name, "fp32") || !strcmp(name, "f32")) return *dt = ZS_F32, 0;
  if (!strcmp(name, "bf16")) return *dt = ZS_BF16, 0;
  return gpt2_fail("--moment-dtype is fp32 or bf16, not '%s'", name);
}

int gpt2_parse_bytes(const char *opt, const char *s, size_t *out) {
  char *end;
  double v = strtod(s, &end);
  double mult = 1.0;
  const char *units = "kmgt";
  const char *u = *end ? strchr(units, *end | 0x20) : NULL;
  if (u && *end) {
    for (const char *q = units; q <= u; q++)
      mult *= 1024.0;
    end++;
    if (!strcmp(end, "iB")) end += 2;
  }
  if (end == s || *end || !(v >= 0) || v * mult >= 1.8e19)
    return gpt2_fail("%s wants a byte count such as 4096, 512K, 64M or 2G, not '%s'", opt, s);
  *out = (size_t)(v * mult + 0.5);
  return 0;
}

void gpt2_precision_describe(int master, zs_dtype moment_dtype, size_t budget, char *out,
                             size_t n) {
  char b[64] = "none";
  if (budget == ZS_BUDGET_FREE)
    snprintf(b, sizeof b, "free at commit");
  else if (budget)
    snprintf(b, sizeof b, "%.2f MiB", (double)budget / (1024.0 * 1024.0));
  snprintf(out, n, "master %s, moments %s, offload budget %s", gpt2_master_name(master),
           moment_dtype == ZS_BF16 ? "bf16" : "fp32", b);
}
