/* Muon (K. Jordan et al., 2024; torch.optim.Muon's semantics) as an optimizer module
 * (docs/OPTIMIZER.md §3): momentum, then the Newton-Schulz orthogonalisation of each matrix's
 * update, applied with decoupled weight decay. Its state: momentum_buffer. It needs each tensor
 * whole (optimizer.h: direction, whole), which the engine gathers at every stage and on every tier;
 * the CPU and CUDA devices (muon_cuda.h). */
#ifndef ZS_OPTIM_MUON_MUON_H
#define ZS_OPTIM_MUON_MUON_H

#include "optim/optimizer.h"

/* Its registry entry (base/opt_shape.h). */
extern const zs_opt_entry zs_opt_muon;

#endif
