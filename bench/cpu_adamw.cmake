# CPU AdamW benchmark (bench/cpu_adamw.c): target `cpu_adamw`. Run it with the torch peer through
# scripts/bench-cpu-adamw.sh. Built like the offload tests (tests/offload.cmake): linked to
# libzshard unless ZS_OFFLOAD_TESTS_LINK_ZSHARD=OFF, then from the offload and AdamW sources.
if(NOT DEFINED ZS_OFFLOAD_TESTS_LINK_ZSHARD OR ZS_OFFLOAD_TESTS_LINK_ZSHARD)
  zs_exe(cpu_adamw SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/cpu_adamw.c LIBS PkgConfig::HWLOC PkgConfig::JEMALLOC)
else()
  file(GLOB zs_cpu_adamw_srcs ${PROJECT_SOURCE_DIR}/src/offload/host_*.c ${PROJECT_SOURCE_DIR}/src/offload/numa_*.c
       ${PROJECT_SOURCE_DIR}/src/offload/worker_*.c ${PROJECT_SOURCE_DIR}/src/kernels/cpu/adamw*.c)
  list(FILTER zs_cpu_adamw_srcs EXCLUDE REGEX "_cuda\\.c$")
  add_executable(cpu_adamw ${CMAKE_CURRENT_SOURCE_DIR}/cpu_adamw.c ${zs_cpu_adamw_srcs}
                           ${PROJECT_SOURCE_DIR}/src/core/error.c)
  target_include_directories(cpu_adamw PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(cpu_adamw PRIVATE $<$<COMPILE_LANGUAGE:C>:${ZS_C_FLAGS}>)
  target_compile_definitions(cpu_adamw PRIVATE _GNU_SOURCE)
  target_link_libraries(cpu_adamw PRIVATE PkgConfig::HWLOC PkgConfig::JEMALLOC Threads::Threads ${ZS_M_LIB})
endif()
