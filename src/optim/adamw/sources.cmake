# AdamW's sources (CMakeLists.txt includes every src/optim/*/sources.cmake).
list(APPEND ZS_LAYER_optim
     src/optim/adamw/adamw.c src/optim/adamw/adamw_dev.c src/optim/adamw/host_update.c
     src/optim/adamw/adamw_mt.c src/optim/adamw/adamw_lean_mt.c src/optim/adamw/adamw_rem_mt.c
     src/optim/adamw/cpu/adamw_dispatch.c src/optim/adamw/cpu/adamw_scalar.c
     src/optim/adamw/cpu/adamw_avx2.c src/optim/adamw/cpu/adamw_avx512.c
     src/optim/adamw/cpu/adamw_lean.c src/optim/adamw/cpu/adamw_lean_avx2.c
     src/optim/adamw/cpu/adamw_lean_avx512.c src/optim/adamw/cpu/adamw_rem.c
     src/optim/adamw/cpu/adamw_rem_avx2.c src/optim/adamw/cpu/adamw_rem_avx512.c)
list(APPEND ZS_LAYER_optim_cuda
     src/optim/adamw/cuda/adamw.cu src/optim/adamw/cuda/adamw_lean.cu
     src/optim/adamw/cuda/adamw_rem.cu)
