# Offload building blocks: CPU AdamW paths (scalar / AVX2 / AVX-512, threaded), the pinned NUMA
# host arena, the NUMA-bound worker pool, and (CUDA builds) the pinned check on a GPU.

# An executable for offload code, linked to libzshard.
function(zs_offload_exe name)
  zs_exe(${name} SOURCES ${ARGN} LIBS PkgConfig::HWLOC PkgConfig::JEMALLOC
         $<$<BOOL:${ZS_HAVE_CUDA}>:CUDA::cudart>)
endfunction()

zs_offload_exe(test_adamw_paths ${CMAKE_CURRENT_SOURCE_DIR}/test_adamw_paths.c)
zs_unit_test(adamw_paths test_adamw_paths LABELS offload TIMEOUT 120)
zs_offload_exe(test_offload_arena ${CMAKE_CURRENT_SOURCE_DIR}/test_offload_arena.c)
zs_unit_test(offload_arena test_offload_arena LABELS offload)
zs_offload_exe(test_offload_pool ${CMAKE_CURRENT_SOURCE_DIR}/test_offload_pool.c)
zs_unit_test(offload_pool test_offload_pool LABELS offload)
if(ZS_HAVE_CUDA)
  zs_offload_exe(test_offload_pinned_cuda ${CMAKE_CURRENT_SOURCE_DIR}/test_offload_pinned_cuda.c)
  zs_unit_test(offload_pinned_cuda test_offload_pinned_cuda LABELS "offload;gpu")
endif()
# The ZS_ADAMW_ISA override picks the named path.
foreach(isa scalar avx2)
  zs_unit_test(adamw_paths_env_${isa} test_adamw_paths ARGS --quick --expect-active ${isa} LABELS offload)
  set_property(TEST adamw_paths_env_${isa} APPEND PROPERTY ENVIRONMENT ZS_ADAMW_ISA=${isa})
endforeach()
# ZS_ADAMW_THREADS gives zs_cpu_adamw a process-wide pool: the bits must not change.
zs_unit_test(adamw_paths_env_threads test_adamw_paths ARGS --quick LABELS offload)
set_property(TEST adamw_paths_env_threads APPEND PROPERTY ENVIRONMENT ZS_ADAMW_THREADS=3)
