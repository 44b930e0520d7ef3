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
# The NVMe tier (src/offload/nvme_*.c): the stream's round trip and the chunked AdamW step against
# the in-memory AdamW, the checkpoint writer's O_DIRECT path (direct_out.h), and its failures (full disk, deleted and truncated files, an injected EIO,
# tmpfs). Files go under the build folder (a real disk; /tmp may be tmpfs).
zs_offload_exe(test_offload_nvme ${CMAKE_CURRENT_LIST_DIR}/test_offload_nvme.c)
zs_unit_test(offload_nvme test_offload_nvme ARGS ${CMAKE_CURRENT_BINARY_DIR} LABELS offload)
set_tests_properties(offload_nvme PROPERTIES SKIP_RETURN_CODE 77) # a build folder on tmpfs
zs_offload_exe(test_offload_nvme_fail ${CMAKE_CURRENT_LIST_DIR}/test_offload_nvme_fail.c)
target_compile_definitions(test_offload_nvme_fail PRIVATE ZS_TEST_HOOKS=1) # zs_nvme_hook_fail_io
zs_unit_test(offload_nvme_fail test_offload_nvme_fail ARGS ${CMAKE_CURRENT_BINARY_DIR} LABELS offload)
set_tests_properties(offload_nvme_fail PROPERTIES SKIP_RETURN_CODE 77)
# The same on a really full disk: a small loop-mounted ext4 (skipped where no loop mount can be made).
add_test(NAME offload_nvme_full_fs COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/nvme_full_fs.sh
                                           ${CMAKE_CURRENT_BINARY_DIR} $<TARGET_FILE:test_offload_nvme_fail> --full-fs)
set_tests_properties(offload_nvme_full_fs PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 60
                                                     LABELS "unit;offload" SKIP_RETURN_CODE 77)
if(ZS_HAVE_CUDA) # the tier's pinned staging slots feeding device copies
  zs_offload_exe(test_offload_nvme_cuda ${CMAKE_CURRENT_LIST_DIR}/test_offload_nvme_cuda.c)
  zs_unit_test(offload_nvme_cuda test_offload_nvme_cuda ARGS ${CMAKE_CURRENT_BINARY_DIR}
               LABELS "offload;gpu")
  # The build folder, or the first of $TMPDIR, /tmp, /var/tmp where O_DIRECT works; with none it
  # prints "SKIP: no O_DIRECT filesystem" and exits 77 (nvt_pick_root).
  set_tests_properties(offload_nvme_cuda PROPERTIES SKIP_RETURN_CODE 77)
endif()
# Lean mode (ZS_MASTER_LEAN): every CPU path and the pool against a reference written from
# zshard.h's contract, bit for bit; the stochastic rounding unbiased, the hash balanced.
zs_offload_exe(test_adamw_lean ${CMAKE_CURRENT_LIST_DIR}/test_adamw_lean.c)
zs_unit_test(adamw_lean test_adamw_lean LABELS offload TIMEOUT 120)
foreach(isa scalar avx2)
  zs_unit_test(adamw_lean_env_${isa} test_adamw_lean ARGS --quick LABELS offload)
  set_property(TEST adamw_lean_env_${isa} APPEND PROPERTY ENVIRONMENT ZS_ADAMW_ISA=${isa})
endforeach()
# The remainder master: split/join a bijection (all 2^32 patterns), each element against a
# reference written in the test, every path and the threaded split the scalar bits.
zs_offload_exe(test_adamw_rem ${CMAKE_CURRENT_LIST_DIR}/test_adamw_rem.c)
zs_unit_test(adamw_rem test_adamw_rem LABELS offload TIMEOUT 300)
