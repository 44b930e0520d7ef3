# CPU GPT-2 kernels: per-kernel timings at a small-GPT size (see bench/kernels_cpu.c).
zs_exe(bench_kernels_cpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/kernels_cpu.c LIBS PkgConfig::OPENBLAS)
