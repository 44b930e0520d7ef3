/* Muon's coefficients of one step (muon.c fills them; its CUDA twin muon_cuda.cu reads them). */
#ifndef ZS_OPTIM_MUON_MUON_COEF_H
#define ZS_OPTIM_MUON_MUON_COEF_H

#include "optim/codec_coef.h"

typedef struct {
  zs_codec_coef head; /* the kernel */
  float gscale, momentum, omm, neg_lr, neg_lr_wd;
  int nesterov, ns_steps, adjust_lr;
} zs_muon_coef;

#endif
