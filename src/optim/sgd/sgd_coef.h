/* SGD's coefficients of one step (sgd.c fills them; its CUDA twin sgd_cuda.cu reads them). */
#ifndef ZS_OPTIM_SGD_SGD_COEF_H
#define ZS_OPTIM_SGD_SGD_COEF_H

#include "optim/codec_coef.h"

typedef struct {
  zs_codec_coef head; /* the kernel */
  float gscale, wd, momentum, omd, neg_lr;
  int first, nesterov;
} zs_sgd_coef;

#endif
