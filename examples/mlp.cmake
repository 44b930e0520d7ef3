# examples/mlp.c: a small MLP trained with zshard on the CPU or a CUDA device (see the file's
# header), and a ctest that trains it at 4 ranks, stage 3, and fails unless the loss halves.
set(zs_mlp_libs)
if(ZS_HAVE_CUDA)
  set(zs_mlp_libs CUDA::cudart) # the example's activation buffers (cudaMalloc) on --device cuda
endif()
zs_exe(mlp SOURCES ${CMAKE_CURRENT_LIST_DIR}/mlp.c LIBS ${zs_mlp_libs})
zs_mpi_test(example_mlp_np4 mlp NP 4 TIMEOUT 180 LABELS example
            ARGS --stage 3 --steps 15 --hidden 64 --check-ratio 0.5)
