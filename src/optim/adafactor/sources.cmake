# Adafactor's sources (CMakeLists.txt includes every src/optim/*/sources.cmake).
list(APPEND ZS_LAYER_optim src/optim/adafactor/adafactor.c)
