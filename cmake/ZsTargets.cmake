# Helpers for tests, examples and benchmarks.
#   zs_exe(name SOURCES ...)  an executable linked to zshard, with src/ on its include path
#   zs_mpi_test(name exe NP n [ARGS ...] [TIMEOUT s] [LABELS ...])  ctest entry under mpirun
#   zs_unit_test(name exe [ARGS ...])  ctest entry, one process
set(ZS_MPIEXEC ${MPIEXEC_EXECUTABLE})
if(NOT ZS_MPIEXEC)
  set(ZS_MPIEXEC mpirun)
endif()
set(ZS_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
    OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl=self,vader,tcp OPENBLAS_NUM_THREADS=1)
# No ZS_COMM_CHECK: the divergence check is on by default in every build, and the tests run that.

# At a test's timeout ctest (3.27 and later; older ones ignore the properties) sends SIGUSR1, on
# which a C test prints its stack (tests/zs_test.h), and kills it 3 s later.
set(ZS_TIMEOUT_SIGNAL TIMEOUT_SIGNAL_NAME SIGUSR1 TIMEOUT_SIGNAL_GRACE_PERIOD 3)

# zs_exe(name SOURCES ... [LIBS ...] [PUBLIC_API]): a program of the tree. PUBLIC_API programs
# (the examples) see include/ only and link libzshard as a user would; the others (tests,
# benchmarks) may reach internal layers and link the static zshard_internal archive.
function(zs_exe name)
  cmake_parse_arguments(A "PUBLIC_API" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  if(A_PUBLIC_API)
    target_include_directories(${name} PRIVATE ${ZS_PUBLIC_INCLUDES})
    set(zs_lib zshard_kernels zshard)
  else()
    target_include_directories(${name} PRIVATE ${ZS_PUBLIC_INCLUDES} ${PROJECT_SOURCE_DIR}/src
                                               ${PROJECT_SOURCE_DIR}/tests)
    set(zs_lib zshard_internal)
  endif()
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:C>:${ZS_C_FLAGS}>)
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE $<$<BOOL:${ZS_HAVE_CUDA}>:ZS_HAVE_CUDA=1>)
  target_link_libraries(${name} PRIVATE ${zs_lib} MPI::MPI_C Threads::Threads ${ZS_M_LIB} ${A_LIBS})
  if(ZS_HAVE_CUDA)
    target_include_directories(${name} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  endif()
endfunction()

function(zs_mpi_test name exe)
  cmake_parse_arguments(A "" "NP;TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(NOT A_NP)
    set(A_NP 1)
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  add_test(NAME ${name} COMMAND ${ZS_MPIEXEC} --oversubscribe -np ${A_NP} $<TARGET_FILE:${exe}> ${A_ARGS})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT ${A_TIMEOUT}
                                          LABELS "mpi;${A_LABELS}" PROCESSORS ${A_NP}
                                          ${ZS_TIMEOUT_SIGNAL})
endfunction()

function(zs_unit_test name exe)
  cmake_parse_arguments(A "" "TIMEOUT" "ARGS;LABELS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 60)
  endif()
  add_test(NAME ${name} COMMAND $<TARGET_FILE:${exe}> ${A_ARGS})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT ${A_TIMEOUT}
                                          LABELS "unit;${A_LABELS}" ${ZS_TIMEOUT_SIGNAL})
endfunction()
