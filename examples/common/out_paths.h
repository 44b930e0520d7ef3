/* The output paths of a training example checked before the first step: each one's directory is
 * created (mkdir -p) and must be writable, so a path that cannot be written is refused at start,
 * not discovered after training. Errors go to gpt2_error() (common/util.h). */
#ifndef COMMON_OUT_PATHS_H
#define COMMON_OUT_PATHS_H

#include "train_args.h"

/* Creates dir and its parents (mkdir -p) and checks that it is a writable directory; `flag`
   names the option in the message. 0, or -1. */
int ex_out_dir(const char *flag, const char *dir);
/* Creates the parents of the file `path` (mkdir -p) and checks that the file can be written
   there: not a directory, and writable when it already exists. Creates no file. 0, or -1. */
int ex_out_file(const char *flag, const char *path);
/* The shared output options: --metrics and --plot (files), --tensorboard and --ckpt-dir (with
   --save-every), --nvme-path and --flight-dir (directories). NULL ones are skipped. 0, or -1. */
int ex_out_check_shared(const ex_train_args *t);

#endif
