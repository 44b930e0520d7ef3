# examples/train_gpt2.c + examples/gpt2/*: GPT-2 training on zshard (see the program's header).
# The safetensors loader parses its JSON header with cJSON (Debian: libcjson-dev).
pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson)
file(GLOB zs_gpt2_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/gpt2/*.c)
# Only the public headers (zshard.h, zshard_kernels.h): device buffers come from zs_kernels_alloc, so no CUDA runtime is linked.
zs_exe(train_gpt2 PUBLIC_API SOURCES ${CMAKE_CURRENT_LIST_DIR}/train_gpt2.c ${zs_gpt2_srcs}
       LIBS PkgConfig::CJSON)
target_compile_definitions(train_gpt2 PRIVATE
                           GPT2_DEFAULT_TEXT="${PROJECT_SOURCE_DIR}/examples/data/genesis_kjv.txt")
