# Checkpoint save/load throughput against the disk's own rate (bench/ckpt_io.sh runs it).
zs_exe(ckpt_io SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/ckpt_io.c)
