# Communication layer: the mpi backend at 1-4 ranks against local references, timeouts of a
# silent peer, env bootstrap + TCP rendezvous.
foreach(t mpi timeout env)
  zs_exe(test_comm_${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_comm_${t}.c)
endforeach()
foreach(np 1 2 3 4)
  zs_mpi_test(comm_mpi_np${np} test_comm_mpi NP ${np} TIMEOUT 60 LABELS comm)
endforeach()
zs_mpi_test(comm_timeout_np3 test_comm_timeout NP 3 TIMEOUT 60 LABELS comm)
zs_unit_test(comm_env test_comm_env TIMEOUT 60 LABELS comm)
