# Offload building blocks: CPU AdamW paths (scalar / AVX2 / AVX-512, threaded), the pinned NUMA
# host arena, the NUMA-bound worker pool, and (CUDA builds) the pinned check on a GPU.
#
# The executables link libzshard through zs_exe. ZS_OFFLOAD_TESTS_LINK_ZSHARD=OFF compiles the
# sources they test directly instead (offload, the AdamW kernels, errors), so they build and run
# while another part of libzshard does not.
option(ZS_OFFLOAD_TESTS_LINK_ZSHARD "Link the offload tests and cpu_adamw bench to libzshard" ON)

# Sources of the offload parts (CUDA-only files only when CUDA is on), for direct builds.
function(zs_offload_sources out)
  file(GLOB s ${PROJECT_SOURCE_DIR}/src/offload/host_*.c ${PROJECT_SOURCE_DIR}/src/offload/numa_*.c
       ${PROJECT_SOURCE_DIR}/src/offload/worker_*.c ${PROJECT_SOURCE_DIR}/src/kernels/cpu/adamw*.c)
  set(keep ${PROJECT_SOURCE_DIR}/src/core/error.c)
  foreach(f ${s})
    if(NOT f MATCHES "_cuda\\.c$" OR ZS_HAVE_CUDA)
      list(APPEND keep ${f})
    endif()
  endforeach()
  set(${out} ${keep} PARENT_SCOPE)
endfunction()

# An executable for offload code: linked to libzshard, or built from the sources above.
function(zs_offload_exe name)
  if(ZS_OFFLOAD_TESTS_LINK_ZSHARD)
    zs_exe(${name} SOURCES ${ARGN} LIBS PkgConfig::HWLOC PkgConfig::JEMALLOC
           $<$<BOOL:${ZS_HAVE_CUDA}>:CUDA::cudart>)
    return()
  endif()
  zs_offload_sources(srcs)
  add_executable(${name} ${ARGN} ${srcs})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:C>:${ZS_C_FLAGS}>)
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE $<$<BOOL:${ZS_HAVE_CUDA}>:ZS_HAVE_CUDA=1>)
  target_link_libraries(${name} PRIVATE PkgConfig::HWLOC PkgConfig::JEMALLOC Threads::Threads ${ZS_M_LIB})
  if(ZS_HAVE_CUDA)
    target_include_directories(${name} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    target_link_libraries(${name} PRIVATE CUDA::cudart)
  endif()
endfunction()

zs_offload_exe(test_adamw_paths ${CMAKE_CURRENT_SOURCE_DIR}/test_adamw_paths.c)
zs_unit_test(adamw_paths test_adamw_paths LABELS offload TIMEOUT 120)
zs_offload_exe(test_offload_arena ${CMAKE_CURRENT_SOURCE_DIR}/test_offload_arena.c)
zs_unit_test(offload_arena test_offload_arena LABELS offload)
zs_offload_exe(test_offload_pool ${CMAKE_CURRENT_SOURCE_DIR}/test_offload_pool.c)
zs_unit_test(offload_pool test_offload_pool LABELS offload)
if(ZS_HAVE_CUDA)
  zs_offload_exe(test_offload_pinned_cuda ${CMAKE_CURRENT_SOURCE_DIR}/test_offload_pinned_cuda.c)
  zs_unit_test(offload_pinned_cuda test_offload_pinned_cuda LABELS "offload;gpu")
endif()
# The ZS_ADAMW_ISA override picks the named path.
foreach(isa scalar avx2)
  zs_unit_test(adamw_paths_env_${isa} test_adamw_paths ARGS --quick --expect-active ${isa} LABELS offload)
  set_property(TEST adamw_paths_env_${isa} APPEND PROPERTY ENVIRONMENT ZS_ADAMW_ISA=${isa})
endforeach()
# ZS_ADAMW_THREADS gives zs_cpu_adamw a process-wide pool: the bits must not change.
zs_unit_test(adamw_paths_env_threads test_adamw_paths ARGS --quick LABELS offload)
set_property(TEST adamw_paths_env_threads APPEND PROPERTY ENVIRONMENT ZS_ADAMW_THREADS=3)
