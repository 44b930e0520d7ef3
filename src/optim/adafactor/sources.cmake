# Adafactor's sources (CMakeLists.txt includes every src/optim/*/sources.cmake).
list(APPEND ZS_LAYER_optim src/optim/adafactor/adafactor.c)
list(APPEND ZS_LAYER_optim_cuda src/optim/adafactor/adafactor_cuda.cu)
