# src/shard on its own: layout arithmetic against a brute-force element walk; the state table
# against the stage table; gather.c and reduce.c on a hand-filled zs_shard_ctx over MPI
# (gathered values, the prefetch window,
# max_live_bytes; every reduction kind, buckets, hybrid groups, accumulation over micro-steps,
# against values computed in the test).
zs_exe(test_shard_layout SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shard_layout.c)
zs_unit_test(shard_layout test_shard_layout LABELS engine)
# The plan's state table: every entry of every configuration against the stage table, and the
# planner's sum of it against the per-category formula.
zs_exe(test_shard_state_table SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shard_state_table.c)
zs_unit_test(shard_state_table test_shard_state_table LABELS engine)
zs_exe(test_shard_reduce SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shard_reduce.c)
foreach(n 1 2 3 4)
  zs_mpi_test(shard_reduce_np${n} test_shard_reduce NP ${n} LABELS engine)
endforeach()
zs_exe(test_shard_gather SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shard_gather.c)
foreach(n 1 2 3 4)
  zs_mpi_test(shard_gather_np${n} test_shard_gather NP ${n} LABELS engine)
endforeach()
# The same over the one-rank `self` backend.
foreach(t reduce gather)
  zs_mpi_test(shard_${t}_self test_shard_${t} NP 1 LABELS engine)
  set_property(TEST shard_${t}_self APPEND PROPERTY ENVIRONMENT ZS_COMM=self)
endforeach()
# Budgeted partial offload: the placement against a greedy reference written in the test and its
# properties (never over the budget, monotone, largest first, deterministic), random cases.
zs_exe(test_shard_placement SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shard_placement.c)
zs_unit_test(shard_placement test_shard_placement LABELS engine)
# The NVMe tier's placement (nvme_path): against a greedy reference written in the test, its
# properties (never over offload_host_bytes, monotone, deterministic), the planner's sums, and the
# configurations the tier refuses.
zs_exe(test_shard_placement_nvme SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_shard_placement_nvme.c)
zs_unit_test(shard_placement_nvme test_shard_placement_nvme LABELS engine)
