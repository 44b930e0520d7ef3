# The worker pool of the CPU optimizer (base layer): placement, parallel-for.
zs_offload_exe(test_offload_pool ${CMAKE_CURRENT_LIST_DIR}/test_offload_pool.c)
zs_unit_test(offload_pool test_offload_pool LABELS offload)
