# examples/train_llama.c + examples/llama/*: Llama-family training on zshard (see the program's
# header). It links what both examples share from examples/common/ and nothing of examples/gpt2/.
set(zs_train_llama_srcs
    ${CMAKE_CURRENT_LIST_DIR}/train_llama.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/args.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/batches.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/convert.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/hf_io.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/hf_read.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/hf_write.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/model.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/sample.c
    ${CMAKE_CURRENT_LIST_DIR}/llama/weights.c
    ${CMAKE_CURRENT_LIST_DIR}/common/llama_activations.c
    ${CMAKE_CURRENT_LIST_DIR}/common/llama_config.c
    ${CMAKE_CURRENT_LIST_DIR}/common/llama_layout.c
    ${CMAKE_CURRENT_LIST_DIR}/common/llama_util.c
    ${zs_example_common_srcs})
zs_exe(train_llama PUBLIC_API SOURCES ${zs_train_llama_srcs} LIBS PkgConfig::CJSON)
target_compile_definitions(train_llama PRIVATE
                           LLAMA_DEFAULT_TEXT="${PROJECT_SOURCE_DIR}/examples/data/genesis_kjv.txt")
