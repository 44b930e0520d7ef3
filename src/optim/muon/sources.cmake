# Muon's sources (CMakeLists.txt includes every src/optim/*/sources.cmake).
list(APPEND ZS_LAYER_optim src/optim/muon/muon.c)
list(APPEND ZS_LAYER_optim_cuda src/optim/muon/muon_cuda.cu)
