/* Output paths prepared before training (see out_paths.h). */
#include "out_paths.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* mkdir -p of the first n bytes of path (a copy is cut at each '/'). 0, or -1 with errno. */
static int mkdir_p(const char *path, size_t n, char *buf, size_t cap) {
  if (n == 0 || n >= cap) return n == 0 ? 0 : (errno = ENAMETOOLONG, -1);
  memcpy(buf, path, n);
  buf[n] = '\0';
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(buf, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
  return 0;
}

int ex_out_dir(const char *flag, const char *dir) {
  char buf[4096];
  if (mkdir_p(dir, strlen(dir), buf, sizeof buf) != 0)
    return gpt2_fail("%s %s: cannot create the directory (%s); refused before training", flag, dir,
                     strerror(errno));
  if (access(dir, W_OK | X_OK) != 0)
    return gpt2_fail("%s %s: the directory is not writable (%s); refused before training", flag,
                     dir, strerror(errno));
  return 0;
}

int ex_out_file(const char *flag, const char *path) {
  char buf[4096];
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 0;
  if (slash == path) n = 1; /* "/file": the root */
  if (mkdir_p(path, n, buf, sizeof buf) != 0)
    return gpt2_fail("%s %s: cannot create its directory (%s); refused before training", flag, path,
                     strerror(errno));
  const char *dir = n ? buf : ".";
  if (access(dir, W_OK | X_OK) != 0)
    return gpt2_fail("%s %s: its directory is not writable (%s); refused before training", flag,
                     path, strerror(errno));
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return gpt2_fail("%s %s: is a directory, not a file; refused before training", flag, path);
    if (access(path, W_OK) != 0)
      return gpt2_fail("%s %s: not writable (%s); refused before training", flag, path,
                       strerror(errno));
  }
  return 0;
}

int ex_out_check_shared(const ex_train_args *t) {
  if (t->metrics) TRY(ex_out_file("--metrics", t->metrics));
  if (t->plot) TRY(ex_out_file("--plot", t->plot));
  if (t->tensorboard) TRY(ex_out_dir("--tensorboard", t->tensorboard));
  if (t->flight_dir) TRY(ex_out_dir("--flight-dir", t->flight_dir));
  if (t->ckpt_dir && t->save_every > 0) TRY(ex_out_dir("--ckpt-dir", t->ckpt_dir));
  if (t->nvme_path) TRY(ex_out_dir("--nvme-path", t->nvme_path));
  return 0;
}
