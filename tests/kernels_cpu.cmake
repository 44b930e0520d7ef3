# CPU reference kernels and the public zs_k_* dispatch (label "kernels"): backward kernels against
# float64 finite differences, forwards against float64 references, argument validation.
foreach(t layers attention xent args)
  zs_exe(test_kernels_cpu_${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_kernels_cpu_${t}.c)
  zs_unit_test(kernels_cpu_${t} test_kernels_cpu_${t} LABELS kernels)
endforeach()
