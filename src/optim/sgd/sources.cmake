# SGD's sources (CMakeLists.txt includes every src/optim/*/sources.cmake).
list(APPEND ZS_LAYER_optim src/optim/sgd/sgd.c)
list(APPEND ZS_LAYER_optim_cuda src/optim/sgd/sgd_cuda.cu)
