# CPU reference kernels and the public zs_k_* dispatch: gradient checks against float64 finite
# differences, forward checks against float64 references, argument validation.
set(ZS_KCPU_TESTS layers attention xent args)
foreach(t ${ZS_KCPU_TESTS})
  add_executable(test_kernels_cpu_${t} ${CMAKE_CURRENT_SOURCE_DIR}/test_kernels_cpu_${t}.c
                 ${PROJECT_SOURCE_DIR}/src/core/error.c ${PROJECT_SOURCE_DIR}/src/kernels/kernels_api.c)
  file(GLOB zs_kcpu_srcs ${PROJECT_SOURCE_DIR}/src/kernels/cpu/gpt2_*.c)
  target_sources(test_kernels_cpu_${t} PRIVATE ${zs_kcpu_srcs})
  target_include_directories(test_kernels_cpu_${t} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(test_kernels_cpu_${t} PRIVATE $<$<COMPILE_LANGUAGE:C>:${ZS_C_FLAGS}>)
  target_compile_definitions(test_kernels_cpu_${t} PRIVATE _GNU_SOURCE)
  target_link_libraries(test_kernels_cpu_${t} PRIVATE PkgConfig::OPENBLAS ${ZS_M_LIB})
  zs_unit_test(kernels_cpu_${t} test_kernels_cpu_${t} LABELS kernels)
endforeach()
