# examples/train_gpt2.c + examples/gpt2/*: GPT-2 training on zshard (see the program's header).
# The safetensors loader parses its JSON header with cJSON (Debian: libcjson-dev; found by the
# top-level CMakeLists.txt for the library's checkpoint manifests).
set(zs_gpt2_srcs
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/args.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/config.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/hf_export.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/dump.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/init.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/init_hf.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/layout.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/unit_descs.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/model.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/safetensors.c
    ${CMAKE_CURRENT_LIST_DIR}/gpt2/sample.c
    ${zs_example_common_srcs})
# Only the public headers (zshard.h, zshard_kernels.h): device buffers come from zs_k_alloc, so no CUDA runtime is linked.
zs_exe(train_gpt2 PUBLIC_API SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_gpt2.c ${zs_gpt2_srcs}
       LIBS PkgConfig::CJSON)
target_compile_definitions(train_gpt2 PRIVATE
                           GPT2_DEFAULT_TEXT="${PROJECT_SOURCE_DIR}/examples/data/genesis_kjv.txt")
# The test build: the same program with the gradient-dump hooks (--dump-grads) that the PyTorch
# reference test reads; train_gpt2 itself carries no test code.
zs_exe(train_gpt2_dump PUBLIC_API SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_gpt2.c ${zs_gpt2_srcs}
       LIBS PkgConfig::CJSON)
target_compile_definitions(train_gpt2_dump PRIVATE GPT2_TEST_HOOKS=1
                           GPT2_DEFAULT_TEXT="${PROJECT_SOURCE_DIR}/examples/data/genesis_kjv.txt")
