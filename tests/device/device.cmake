# CPU AdamW paths (scalar, AVX2, AVX-512, threads) give identical bits (device layer).
zs_offload_exe(test_adamw_paths ${CMAKE_CURRENT_LIST_DIR}/test_adamw_paths.c)
zs_unit_test(adamw_paths test_adamw_paths LABELS offload TIMEOUT 120)
foreach(isa scalar avx2)
  zs_unit_test(adamw_paths_env_${isa} test_adamw_paths ARGS --quick --expect-active ${isa} LABELS offload)
  set_property(TEST adamw_paths_env_${isa} APPEND PROPERTY ENVIRONMENT ZS_ADAMW_ISA=${isa})
endforeach()
# ZS_ADAMW_THREADS: the worker count an engine's optimizer starts (src/optim/optim.c), as a pool.
zs_unit_test(adamw_paths_env_threads test_adamw_paths ARGS --quick --expect-threads 3 LABELS offload)
set_property(TEST adamw_paths_env_threads APPEND PROPERTY ENVIRONMENT ZS_ADAMW_THREADS=3)
# When a GPU test may print "SKIP: no CUDA device" (tests/zs_test_cuda.h): only when no device is
# visible; any other CUDA failure must fail it. CUDA builds; runs without a GPU.
if(ZS_HAVE_CUDA)
  # (not a GPU test: no "cuda" in the program's name, see tests/scripts/check_gpu_tests.py)
  zs_exe(test_gpu_skip_rule SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_skip_rule.c)
  zs_unit_test(gpu_skip_rule test_gpu_skip_rule LABELS device)
endif()
