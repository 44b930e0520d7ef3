/* Moving a micro-batch's tokens to the device and its per-token losses back: what both training
 * examples do around every forward. Errors go to gpt2_error() (common/util.h). */
#ifndef COMMON_TOKEN_IO_H
#define COMMON_TOKEN_IO_H

#include <stddef.h>

#include "device.h"

/* Copies n host token ids into dtok, and n targets into dtgt when tgt is not NULL (device int32
   buffers of at least n). 0 or -1. */
int ex_upload_tokens(const gpt2_dev *dev, int *dtok, int *dtgt, const int *tok, const int *tgt,
                     size_t n);
/* *loss = the mean of the first n per-token losses of the device buffer `losses`, read through
   host (n floats) and summed in double, in order. 0 or -1. */
int ex_mean_loss(const gpt2_dev *dev, float *host, const float *losses, int n, float *loss);

#endif
