# CUDA kernel benchmark at GPT-2 d12 sizes (see bench/kernels_cuda.c); CUDA builds only. It is
# run by scripts/device-first.sh (item d12) on the GPU machine.
if(ZS_HAVE_CUDA)
  zs_exe(bench_kernels_cuda SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/kernels_cuda.c LIBS CUDA::cudart)
endif()
