# CPU AdamW paths (scalar, AVX2, AVX-512, threads) give identical bits (device layer).
zs_offload_exe(test_adamw_paths ${CMAKE_CURRENT_LIST_DIR}/test_adamw_paths.c)
zs_unit_test(adamw_paths test_adamw_paths LABELS offload TIMEOUT 120)
foreach(isa scalar avx2)
  zs_unit_test(adamw_paths_env_${isa} test_adamw_paths ARGS --quick --expect-active ${isa} LABELS offload)
  set_property(TEST adamw_paths_env_${isa} APPEND PROPERTY ENVIRONMENT ZS_ADAMW_ISA=${isa})
endforeach()
zs_unit_test(adamw_paths_env_threads test_adamw_paths ARGS --quick LABELS offload)
set_property(TEST adamw_paths_env_threads APPEND PROPERTY ENVIRONMENT ZS_ADAMW_THREADS=3)
