# Stage-comparison memory benchmark (bench/stage_memory.c): run under mpirun.
zs_exe(stage_memory SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/stage_memory.c)
