# Collective benchmark over the comm layer (bench/collectives.c): run under mpirun.
zs_exe(collectives SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/collectives.c)
