# examples/llmc_layout.c: a model kept in llm.c's layout (one array per parameter type across
# layers) loaded and read back with zs_engine_set_params / zs_engine_get_params, tensors found by
# name; the ctest runs it at 2 ranks, stage 3, and fails unless the read-back is bit-exact.
zs_exe(llmc_layout PUBLIC_API SOURCES ${CMAKE_CURRENT_LIST_DIR}/llmc_layout.c)
zs_mpi_test(example_llmc_layout_np2 llmc_layout NP 2 TIMEOUT 60 LABELS example
            ARGS --stage 3 --steps 5)
