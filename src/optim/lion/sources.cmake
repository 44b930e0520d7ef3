# Lion's sources (CMakeLists.txt includes every src/optim/*/sources.cmake).
list(APPEND ZS_LAYER_optim src/optim/lion/lion.c)
list(APPEND ZS_LAYER_optim_cuda src/optim/lion/lion_cuda.cu)
