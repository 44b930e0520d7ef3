# Latency-bound cost of the divergence check (bench/diverge_latency.c): run under mpirun.
zs_exe(diverge_latency SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/diverge_latency.c)
