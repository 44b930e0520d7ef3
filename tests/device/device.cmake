# When a GPU test may print "SKIP: no CUDA device" (tests/zs_test_cuda.h): only when no device is
# visible; any other CUDA failure must fail it. CUDA builds; runs without a GPU.
if(ZS_HAVE_CUDA)
  # (not a GPU test: no "cuda" in the program's name, see tests/scripts/check_gpu_tests.py)
  zs_exe(test_gpu_skip_rule SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpu_skip_rule.c)
  zs_unit_test(gpu_skip_rule test_gpu_skip_rule LABELS device)
endif()
# The CPU device's memory: alignment, and a large buffer's address space exactly its pages, given
# back at the free (VmSize).
zs_exe(test_host_map SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_host_map.c)
zs_unit_test(device_host_map test_host_map LABELS device)
# The exact sum of squares' bins on the GPU (src/device/cuda/sq_bins.cu, grouped per warp) against
# the CPU twin and the definition, word for word: mixed exponents, subnormals, inf/NaN, blocks of
# one exponent at the largest mantissa (the overflow worst case). Prints "SKIP: no CUDA device"
# without a GPU.
if(ZS_HAVE_CUDA)
  zs_exe(test_device_cuda_sq_bins SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_device_cuda_sq_bins.c
         LIBS CUDA::cudart)
  zs_unit_test(device_cuda_sq_bins test_device_cuda_sq_bins LABELS "device;gpu")
endif()
# The GPU counters' loader (src/device/nvml.c) against a stand-in libnvidia-ml with fixed
# answers, and zs_engine_device_usage's refusal on the CPU device.
add_library(zs_fake_nvml SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_nvml.c)
set_target_properties(zs_fake_nvml PROPERTIES C_VISIBILITY_PRESET default)
zs_exe(test_nvml SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nvml.c LIBS ${CMAKE_DL_LIBS})
add_dependencies(test_nvml zs_fake_nvml)
zs_mpi_test(device_nvml test_nvml NP 1 ARGS $<TARGET_FILE:zs_fake_nvml> LABELS device)
