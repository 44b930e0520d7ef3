# Host <-> device copy rates and the optimizer's copy pipeline beside them (bench/copy_rates.c);
# CUDA builds only. Run by scripts/device-first.sh (item d12) on the GPU machine.
if(ZS_HAVE_CUDA)
  zs_exe(bench_copy_rates SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/copy_rates.c
         LIBS CUDA::cudart PkgConfig::HWLOC PkgConfig::JEMALLOC)
endif()
