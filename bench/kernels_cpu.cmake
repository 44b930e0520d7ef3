# CPU GPT-2 kernels: per-kernel timings at a small-GPT size (see bench/kernels_cpu.c).
file(GLOB zs_kcpu_bench_srcs ${PROJECT_SOURCE_DIR}/src/kernels/cpu/gpt2_*.c)
add_executable(bench_kernels_cpu ${CMAKE_CURRENT_SOURCE_DIR}/kernels_cpu.c ${zs_kcpu_bench_srcs}
               ${PROJECT_SOURCE_DIR}/src/core/error.c ${PROJECT_SOURCE_DIR}/src/kernels/kernels_api.c)
target_include_directories(bench_kernels_cpu PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_compile_options(bench_kernels_cpu PRIVATE $<$<COMPILE_LANGUAGE:C>:${ZS_C_FLAGS}>)
target_compile_definitions(bench_kernels_cpu PRIVATE _GNU_SOURCE)
target_link_libraries(bench_kernels_cpu PRIVATE PkgConfig::OPENBLAS ${ZS_M_LIB})
