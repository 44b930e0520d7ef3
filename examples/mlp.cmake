# examples/mlp.c: a small MLP trained with zshard on the CPU or a CUDA device (see the file's
# header), and a ctest that trains it at 4 ranks, stage 3, and fails unless the loss halves.
# Only the public headers (zshard.h, zshard_kernels.h): activations come from zs_k_alloc, so no CUDA runtime is linked.
zs_exe(mlp PUBLIC_API SOURCES ${CMAKE_CURRENT_LIST_DIR}/mlp.c)
zs_mpi_test(example_mlp_np4 mlp NP 4 TIMEOUT 180 LABELS example
            ARGS --stage 3 --steps 15 --hidden 64 --check-ratio 0.5)
