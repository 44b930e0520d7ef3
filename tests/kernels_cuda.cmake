# CUDA kernel tests (GPU twins vs the CPU reference). Only in CUDA builds; each test prints
# "SKIP: no CUDA device" and passes on a machine without a GPU.
if(ZS_HAVE_CUDA)
  foreach(t test_kernels_cuda test_kernels_cuda_engine)
    zs_exe(${t} SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c LIBS CUDA::cudart)
    zs_unit_test(${t} ${t} TIMEOUT 300 LABELS cuda)
  endforeach()
endif()
