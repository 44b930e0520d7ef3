# Communication layer: the mpi backend at 1-4 ranks against local references, timeouts of a
# silent peer, env bootstrap + TCP rendezvous, and (CUDA builds) nccl / mpi-staged on device
# buffers, which skips cleanly where no GPU is present.
foreach(t mpi timeout env host_reduce)
  zs_exe(test_comm_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_comm_${t}.c)
endforeach()
foreach(np 1 2 3 4)
  zs_mpi_test(comm_mpi_np${np} test_comm_mpi NP ${np} TIMEOUT 60 LABELS comm)
endforeach()
zs_mpi_test(comm_timeout_np3 test_comm_timeout NP 3 TIMEOUT 60 LABELS comm)
zs_unit_test(comm_env test_comm_env TIMEOUT 60 LABELS comm)
# zs_comm_allreduce: MPI at 1-4 ranks, the env rendezvous at 1-4 (forked), a silent peer on both.
foreach(np 1 2 3 4)
  zs_mpi_test(comm_host_reduce_np${np} test_comm_host_reduce NP ${np} TIMEOUT 60 LABELS comm)
endforeach()
zs_mpi_test(comm_host_reduce_timeout_np3 test_comm_host_reduce NP 3 ARGS --timeout TIMEOUT 60
            LABELS comm)
zs_unit_test(comm_host_reduce_env test_comm_host_reduce ARGS --env TIMEOUT 60 LABELS comm)
if(ZS_HAVE_CUDA)
  zs_exe(test_comm_nccl SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_comm_nccl.c LIBS CUDA::cudart)
  zs_mpi_test(comm_nccl_np1 test_comm_nccl NP 1 TIMEOUT 120 LABELS comm gpu)
  zs_mpi_test(comm_nccl_np2 test_comm_nccl NP 2 TIMEOUT 120 LABELS comm gpu)
endif()
