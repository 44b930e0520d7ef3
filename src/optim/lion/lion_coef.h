/* Lion's coefficients of one step (lion.c fills them; its CUDA twin lion_cuda.cu reads them). */
#ifndef ZS_OPTIM_LION_LION_COEF_H
#define ZS_OPTIM_LION_LION_COEF_H

#include "optim/codec_coef.h"

typedef struct {
  zs_codec_coef head; /* the kernel */
  float gscale, beta1, omb1, beta2, omb2, neg_lr, neg_lr_wd;
} zs_lion_coef;

#endif
