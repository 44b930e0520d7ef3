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
# zs_comm_init_mpi with a rank that does not come: ZS_ERR_TIMEOUT, never a hang (about 4 s; the
# ctest timeout turns a hang into a failure).
zs_exe(test_comm_boot_timeout SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_comm_boot_timeout.c)
zs_mpi_test(comm_boot_timeout_np2 test_comm_boot_timeout NP 2 TIMEOUT 30 LABELS comm)
# tests/with_hostid.sh (several NCCL ranks on one GPU): a per-rank NCCL_HOSTID and NCCL's sockets
# on the loopback interface (NCCL_SOCKET_IFNAME=lo). Not a GPU test: it only reads the environment.
add_test(NAME comm_hostid_env COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_hostid_env.sh)
set_tests_properties(comm_hostid_env PROPERTIES LABELS "unit;comm" TIMEOUT 30)
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

# GPU readiness (tests/gpu_tests.md): zs_comm_init_env + the TCP rendezvous with NCCL, ranks
# started as torchrun would (no MPI), a CUDA engine trained on them against a 1-rank CPU engine;
# and the NCCL / mpi-staged collectives at 4 ranks on one GPU (test_comm_nccl sets NCCL_HOSTID
# itself; gpu_expect.sh gives it the standard skip line and requires its OK line).
if(ZS_HAVE_CUDA)
  zs_exe(test_comm_env_nccl SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_comm_env_nccl.c LIBS CUDA::cudart)
  foreach(run "2;3" "3;1")
    list(GET run 0 np)
    list(GET run 1 stage)
    zs_unit_test(comm_env_nccl_np${np}_stage${stage} test_comm_env_nccl ARGS ${np} ${stage} 4
                 TIMEOUT 180 LABELS comm gpu)
    set_tests_properties(comm_env_nccl_np${np}_stage${stage} PROPERTIES PROCESSORS ${np})
  endforeach()
  add_test(NAME comm_nccl_np4
           COMMAND bash ${ZS_TESTS_DIR}/gpu_expect.sh $<TARGET_FILE:zs_cuda_probe> "test_comm_nccl: OK" --
                   ${ZS_MPIEXEC} --oversubscribe -np 4 $<TARGET_FILE:test_comm_nccl>)
  set_tests_properties(comm_nccl_np4 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 180
                       LABELS "mpi;comm;gpu" PROCESSORS 4)
endif()
# MPI_COMM_WORLD's handler: MPI's fatal default replaced while a comm lives and put back by the last
# destroy; a handler the program installed is left alone.
zs_exe(test_comm_errhandler SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_comm_errhandler.c)
zs_mpi_test(comm_errhandler_np2 test_comm_errhandler NP 2 TIMEOUT 60 LABELS comm)
