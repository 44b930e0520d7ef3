# The offload layer (src/offload/): the worker pool of the CPU optimizer (placement, parallel-for),
# the pinned NUMA-aware host arena (and pinning on CUDA), the CPU AdamW paths over a pool.
zs_offload_exe(test_offload_pool ${CMAKE_CURRENT_LIST_DIR}/test_offload_pool.c)
zs_unit_test(offload_pool test_offload_pool LABELS offload)
zs_offload_exe(test_offload_arena ${CMAKE_CURRENT_LIST_DIR}/test_offload_arena.c)
zs_unit_test(offload_arena test_offload_arena LABELS offload)
if(ZS_HAVE_CUDA)
  zs_offload_exe(test_offload_pinned_cuda ${CMAKE_CURRENT_LIST_DIR}/test_offload_pinned_cuda.c)
  zs_unit_test(offload_pinned_cuda test_offload_pinned_cuda LABELS "offload;gpu")
endif()
# CPU AdamW paths (scalar, AVX2, AVX-512: the device layer's kernels; threads over a pool: the
# offload layer's) give identical bits.
zs_offload_exe(test_adamw_paths ${CMAKE_CURRENT_LIST_DIR}/test_adamw_paths.c)
zs_unit_test(adamw_paths test_adamw_paths LABELS offload TIMEOUT 120)
foreach(isa scalar avx2)
  zs_unit_test(adamw_paths_env_${isa} test_adamw_paths ARGS --quick --expect-active ${isa} LABELS offload)
  set_property(TEST adamw_paths_env_${isa} APPEND PROPERTY ENVIRONMENT ZS_ADAMW_ISA=${isa})
endforeach()
# ZS_ADAMW_THREADS: the worker count an engine's optimizer starts (src/optim/optim.c), as a pool.
zs_unit_test(adamw_paths_env_threads test_adamw_paths ARGS --quick --expect-threads 3 LABELS offload)
set_property(TEST adamw_paths_env_threads APPEND PROPERTY ENVIRONMENT ZS_ADAMW_THREADS=3)
# The remainder master: split/join a bijection (all 2^32 patterns), each element against a
# reference written in the test, every path and the threaded split the scalar bits.
zs_offload_exe(test_adamw_rem ${CMAKE_CURRENT_LIST_DIR}/test_adamw_rem.c)
zs_unit_test(adamw_rem test_adamw_rem LABELS offload TIMEOUT 300)
