# examples/common/*: what train_gpt2 and train_llama share (the shared options, the engine and
# kernels setup, the step loop and its reports, activation buffers, a unit's param/gradient
# pointers, token upload and loss download, the sampler) and the model-independent parts under
# them (token data, metrics and plot, device memory, bf16 widening, precision flags, --freeze,
# counter RNG, error plumbing). Nothing here includes examples/gpt2/ or examples/llama/. Included
# before gpt2.cmake and llama.cmake (CMakeLists.txt sorts the fragments), which add these sources
# to their programs. The llama_* files (the Llama-family config reader, units, activation formula
# and their error plumbing) are what train_llama shares with zshard-plan instead: llama.cmake and
# tools/CMakeLists.txt list them.
set(zs_example_common_srcs
    ${CMAKE_CURRENT_LIST_DIR}/common/act_buffers.c
    ${CMAKE_CURRENT_LIST_DIR}/common/data.c
    ${CMAKE_CURRENT_LIST_DIR}/common/device.c
    ${CMAKE_CURRENT_LIST_DIR}/common/engine_setup.c
    ${CMAKE_CURRENT_LIST_DIR}/common/freeze.c
    ${CMAKE_CURRENT_LIST_DIR}/common/lr_schedule.c
    ${CMAKE_CURRENT_LIST_DIR}/common/metrics.c
    ${CMAKE_CURRENT_LIST_DIR}/common/tb_events.c
    ${CMAKE_CURRENT_LIST_DIR}/common/out_paths.c
    ${CMAKE_CURRENT_LIST_DIR}/common/plot.c
    ${CMAKE_CURRENT_LIST_DIR}/common/precision.c
    ${CMAKE_CURRENT_LIST_DIR}/common/rng.c
    ${CMAKE_CURRENT_LIST_DIR}/common/run_lifecycle.c
    ${CMAKE_CURRENT_LIST_DIR}/common/run_report.c
    ${CMAKE_CURRENT_LIST_DIR}/common/sample.c
    ${CMAKE_CURRENT_LIST_DIR}/common/token_io.c
    ${CMAKE_CURRENT_LIST_DIR}/common/train_args.c
    ${CMAKE_CURRENT_LIST_DIR}/common/train_loop.c
    ${CMAKE_CURRENT_LIST_DIR}/common/train_step.c
    ${CMAKE_CURRENT_LIST_DIR}/common/unit_pointers.c
    ${CMAKE_CURRENT_LIST_DIR}/common/util.c
    ${CMAKE_CURRENT_LIST_DIR}/common/widen.c)
