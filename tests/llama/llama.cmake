# The Llama example's parts (examples/llama/): Hugging Face config.json, safetensors directories
# in and out, the unit layout (test_llama_io.c, C only), and against transformers itself
# (test_llama_hf.sh: directories saved by save_pretrained read tensor by tensor, ours loaded by
# from_pretrained; skipped with 77 where no Python with transformers can be had).
if(ZS_BUILD_EXAMPLES)
  set(zs_llama_io_srcs
      ${PROJECT_SOURCE_DIR}/examples/common/llama_config.c
      ${PROJECT_SOURCE_DIR}/examples/llama/convert.c
      ${PROJECT_SOURCE_DIR}/examples/llama/hf_io.c ${PROJECT_SOURCE_DIR}/examples/llama/hf_read.c
      ${PROJECT_SOURCE_DIR}/examples/llama/hf_write.c
      ${PROJECT_SOURCE_DIR}/examples/common/llama_layout.c
      ${PROJECT_SOURCE_DIR}/examples/common/llama_util.c)
  zs_exe(test_llama_io SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llama_io.c ${zs_llama_io_srcs}
         LIBS PkgConfig::CJSON)
  target_include_directories(test_llama_io PRIVATE ${PROJECT_SOURCE_DIR}/examples)
  zs_unit_test(llama_io test_llama_io LABELS llama)
endif()
if(ZS_BUILD_EXAMPLES)
  zs_exe(llama_io_tool SOURCES ${CMAKE_CURRENT_LIST_DIR}/llama_io_tool.c ${zs_llama_io_srcs}
         LIBS PkgConfig::CJSON)
  target_include_directories(llama_io_tool PRIVATE ${PROJECT_SOURCE_DIR}/examples)
  add_test(NAME llama_hf_io COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_llama_hf.sh
                                    $<TARGET_FILE:llama_io_tool> ${PROJECT_SOURCE_DIR})
  set_tests_properties(llama_hf_io PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 600
                                              LABELS "llama;python" SKIP_RETURN_CODE 77)
endif()
# The example's sampling (llama/sample.c over common/sample.c) on the CPU device with a fake
# forward (temperature <= 0: greedy).
if(ZS_BUILD_EXAMPLES)
  zs_exe(test_llama_sample PUBLIC_API SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llama_sample.c
         ${PROJECT_SOURCE_DIR}/examples/llama/sample.c ${PROJECT_SOURCE_DIR}/examples/common/sample.c
         ${PROJECT_SOURCE_DIR}/examples/common/device.c
         ${PROJECT_SOURCE_DIR}/examples/common/rng.c ${PROJECT_SOURCE_DIR}/examples/common/util.c)
  target_include_directories(test_llama_sample PRIVATE ${PROJECT_SOURCE_DIR}/examples
                                                       ${PROJECT_SOURCE_DIR}/tests)
  zs_unit_test(llama_sample test_llama_sample LABELS llama)
endif()
# The Hugging Face reference script for the example's loss/step proof, checked on its own.
add_test(NAME llama_hf_reference COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_llama_ref.sh
                                         ${PROJECT_SOURCE_DIR})
set_tests_properties(llama_hf_reference PROPERTIES TIMEOUT 300 LABELS "llama;python"
                                                   SKIP_RETURN_CODE 77)
# The layout's units in a real engine (stage 3, 1 and 2 ranks): HF directory -> engine -> HF
# directory (sharded F32 / BF16 through the writer, and the engine's own export with the names).
if(ZS_BUILD_EXAMPLES)
  zs_exe(test_llama_engine PUBLIC_API SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_llama_engine.c
         ${zs_llama_io_srcs} ${PROJECT_SOURCE_DIR}/examples/llama/engine_io.c LIBS PkgConfig::CJSON)
  target_include_directories(test_llama_engine PRIVATE ${PROJECT_SOURCE_DIR}/examples
                                                       ${PROJECT_SOURCE_DIR}/tests)
  foreach(n 1 2)
    zs_mpi_test(llama_engine_np${n} test_llama_engine NP ${n} LABELS llama)
  endforeach()
endif()
# train_llama against transformers: loss at init, 5 AdamW steps (losses and weights), the export
# loaded by from_pretrained; 1 and 2 ranks (test_train_llama_hf.sh).
if(ZS_BUILD_EXAMPLES)
  add_test(NAME train_llama_hf COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_train_llama_hf.sh
                                       $<TARGET_FILE:train_llama> ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC})
  set_tests_properties(train_llama_hf PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 600
                                                 LABELS "llama;python;mpi" SKIP_RETURN_CODE 77
                                                 PROCESSORS 2)
endif()
# train_llama's refusals at start: head_dim > 128 on CUDA, --export over an earlier export, an
# output path that cannot be created.
if(ZS_BUILD_EXAMPLES)
  add_test(NAME train_llama_refusals COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_train_llama_refusals.sh
                                             $<TARGET_FILE:train_llama>)
  set_tests_properties(train_llama_refusals PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                                                       LABELS llama)
endif()
# train_llama's --master, --moment-dtype, --offload-budget and --freeze against the default run
# (bit-identical, close with a bound, frozen tensors unchanged; test_train_llama_modes.sh).
if(ZS_BUILD_EXAMPLES)
  add_test(NAME train_llama_modes
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_train_llama_modes.sh
                   $<TARGET_FILE:train_llama> ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC}
                   $<TARGET_FILE:zshard-plan>)
  set_tests_properties(train_llama_modes PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 300
                                                    LABELS "llama;python;mpi" PROCESSORS 2)
endif()
# The same proof on the CUDA device (fp32; 1 rank stage 0, 2 ranks stage 3 over NCCL): a GPU
# test (tests/gpu_tests.md), "SKIP: no CUDA device" without one.
if(ZS_BUILD_EXAMPLES AND ZS_HAVE_CUDA)
  add_test(NAME train_llama_hf_cuda
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_train_llama_hf.sh $<TARGET_FILE:train_llama>
                   ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC} $<TARGET_FILE:zs_cuda_probe>)
  set_tests_properties(train_llama_hf_cuda PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 300
                                                      LABELS "llama;python;mpi;gpu"
                                                      SKIP_RETURN_CODE 77 PROCESSORS 2)
endif()
