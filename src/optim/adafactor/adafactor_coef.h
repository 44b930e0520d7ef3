/* Adafactor's coefficients of one step (adafactor.c fills them; its CUDA twin adafactor_cuda.cu
 * reads them). */
#ifndef ZS_OPTIM_ADAFACTOR_ADAFACTOR_COEF_H
#define ZS_OPTIM_ADAFACTOR_ADAFACTOR_COEF_H

#include "optim/codec_coef.h"

typedef struct {
  zs_codec_coef head; /* the kernel */
  float gscale, w, rho, eps1, eps2, d, neg_lr_wd;
} zs_adafactor_coef;

#endif
