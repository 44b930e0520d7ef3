# The host memory available to the process (on made-up /proc and cgroup trees: v1, v2,
# ancestors).
zs_exe(test_host_mem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_host_mem.c)
zs_unit_test(host_mem test_host_mem LABELS engine)
# The memory owner: the ledger by category, frees deferred while broken or after a collective's
# failure, and performed by the drain.
zs_exe(test_mem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mem.c)
zs_unit_test(mem_owner test_mem LABELS engine)
