# GPT-2 example tests (examples/train_gpt2.c; scripts in this folder):
#   gpt2_ref          logits, losses and all gradients vs PyTorch (tests/gpt2/reference/gpt2_ref.py),
#                     stage 3 at 1 and 2 ranks, stage 2 deterministic + recompute, safetensors
#                     init, truncated-file refusal. Needs a Python with torch:
#                     scripts/ensure-torch.sh finds one or installs Debian's python3-torch; it
#                     skips (77) at once where neither works (no network: the GPU machine).
#   gpt2_determinism  20 steps, --deterministic: identical final weights for 1x4, 4x1 and 2x2
#                     (ranks x micro-steps) at stages 0-3.
#   gpt2_train_np4    4 ranks, stage 3: the loss must fall below 0.9 x the text's unigram entropy.
#   gpt2_bad_args     a bad stage is refused with a message (exit 1), not a crash.
#   gpt2_args         output paths, --help's defaults, optimizer flags, samples, NVMe flags.
#   gpt2_precision    --master params, --offload-budget: bit-identical to the default run;
#                     --moment-dtype bf16 within an argued bound; optimizer bytes per mode.
#   gpt2_ckpt         --save-every/--resume bit for bit across ranks and stages, --export loaded
#                     by transformers (logits to 1e-5), --init-safetensors reads config.json.
if(ZS_BUILD_EXAMPLES)
  add_test(NAME gpt2_ref COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_ref.sh
                                 $<TARGET_FILE:train_gpt2_dump> ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC})
  set_tests_properties(gpt2_ref PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 900
                                           LABELS "gpt2;mpi;python" PROCESSORS 2
                                           SKIP_RETURN_CODE 77)
  add_test(NAME gpt2_ckpt COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_ckpt.sh
                                  $<TARGET_FILE:train_gpt2> ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC})
  set_tests_properties(gpt2_ckpt PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 600
                                            LABELS "gpt2;mpi;python;ckpt" PROCESSORS 2
                                            SKIP_RETURN_CODE 77)
  add_test(NAME gpt2_determinism COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_determinism.sh
                                         $<TARGET_FILE:train_gpt2> ${ZS_MPIEXEC} 20)
  set_tests_properties(gpt2_determinism PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 240
                                                   LABELS "gpt2;mpi" PROCESSORS 4)
  zs_mpi_test(gpt2_train_np4 train_gpt2 NP 4 TIMEOUT 240 LABELS gpt2
              ARGS --stage 3 --layers 1 --channels 128 --heads 4 --seq 32 --batch 4 --steps 80
                   --lr 3e-3 --log-every 20 --sample-lines 1 --sample-chars 80 --check-frac 0.9)
  add_test(NAME gpt2_bad_args COMMAND $<TARGET_FILE:train_gpt2> --stage 7 --steps 1)
  set_tests_properties(gpt2_bad_args PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 60
                       LABELS "gpt2" PASS_REGULAR_EXPRESSION "error: .*stage")
  # The command line's edges (test_gpt2_args.sh): output paths checked before training, --help's
  # defaults, optimizer options, samples by data kind, NVMe flags, the demo's summary.
  # --tensorboard: the event files read back by TensorBoard's own reader equal the JSONL metrics
  # bit for bit, a resumed run adding a second file (test_gpt2_tensorboard.sh; skips, 77, where
  # the reader cannot be installed).
  add_test(NAME gpt2_tensorboard COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_tensorboard.sh
                                         $<TARGET_FILE:train_gpt2> ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC}
                                         $<TARGET_FILE:train_llama>)
  set_tests_properties(gpt2_tensorboard PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 300
                                                   LABELS "gpt2;mpi;python" PROCESSORS 2
                                                   SKIP_RETURN_CODE 77)
  # --flight-dir: two ranks that diverge write their flight records, named in their messages,
  # and tools/flight/zshard-flight names the divergence (test_gpt2_flight.sh).
  add_test(NAME gpt2_flight_np2 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_flight.sh
                                        $<TARGET_FILE:train_gpt2> ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC}
                                        ${ZS_FLIGHT_PYTHON3})
  set_tests_properties(gpt2_flight_np2 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                                                  LABELS "gpt2;mpi" PROCESSORS 2)
  # A disk that fills up mid-run (a small loop-mounted ext4; skipped where none can be made):
  # asynchronous saves that fail are reported and survived, the last good checkpoint resumes,
  # --save-retries stops the run (test_gpt2_save_fail.sh).
  add_test(NAME gpt2_save_fail_np2
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/offload/nvme_full_fs.sh ${CMAKE_CURRENT_BINARY_DIR}
                   bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_save_fail.sh $<TARGET_FILE:train_gpt2>
                   ${ZS_MPIEXEC})
  set_tests_properties(gpt2_save_fail_np2 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 180
                                                     LABELS "gpt2;mpi" PROCESSORS 2
                                                     SKIP_RETURN_CODE 77)
  add_test(NAME gpt2_args COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_args.sh
                                  $<TARGET_FILE:train_gpt2> ${PROJECT_SOURCE_DIR})
  set_tests_properties(gpt2_args PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120 LABELS gpt2)
endif()
# Host-side parts of the example (batch schedule, token files, safetensors, schedule, sizes).
if(ZS_BUILD_EXAMPLES)
  pkg_check_modules(CJSON REQUIRED IMPORTED_TARGET libcjson) # imported targets are per directory
  zs_exe(test_gpt2_parts SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_parts.c
         ${PROJECT_SOURCE_DIR}/examples/common/data.c ${PROJECT_SOURCE_DIR}/examples/common/rng.c
         ${PROJECT_SOURCE_DIR}/examples/common/util.c ${PROJECT_SOURCE_DIR}/examples/gpt2/config.c
         ${PROJECT_SOURCE_DIR}/examples/common/metrics.c
         ${PROJECT_SOURCE_DIR}/examples/common/tb_events.c
         ${PROJECT_SOURCE_DIR}/examples/common/plot.c
         ${PROJECT_SOURCE_DIR}/examples/gpt2/safetensors.c
         ${PROJECT_SOURCE_DIR}/examples/common/lr_schedule.c LIBS PkgConfig::CJSON)
  zs_unit_test(gpt2_parts test_gpt2_parts LABELS gpt2)
endif()
# Stage 3 with evaluation every step and sampling: buffers peak within the memory rule.
if(ZS_BUILD_EXAMPLES)
  add_test(NAME gpt2_eval_memory COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_memory.sh
                                         $<TARGET_FILE:train_gpt2> ${ZS_MPIEXEC})
  set_tests_properties(gpt2_eval_memory PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                                                   LABELS "gpt2;mpi" PROCESSORS 2)
  # --freeze blocks: the blocks leave the run as they came, and cost no gradient or optimizer byte.
  add_test(NAME gpt2_freeze COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_freeze.sh
                                    $<TARGET_FILE:train_gpt2> ${ZS_MPIEXEC})
  set_tests_properties(gpt2_freeze PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                                              LABELS "gpt2;mpi" PROCESSORS 2)
  # --master params / --offload-budget bit-identical to the default run, --moment-dtype bf16
  # within its argued bound, the ledger's optimizer bytes per mode (test_gpt2_precision.sh).
  # bf16 params on the CPU device (fp32 compute on widened units) against fp32, the memory
  # table's scratch, and lean mode identical across ranks and stages (test_gpt2_bf16_cpu.sh).
  add_test(NAME gpt2_bf16_cpu COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_bf16_cpu.sh
                                      $<TARGET_FILE:train_gpt2> ${ZS_MPIEXEC})
  set_tests_properties(gpt2_bf16_cpu PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 240
                                                LABELS "gpt2;mpi;python" PROCESSORS 2)
  # --offload-budget free under a 1.5 GB RLIMIT_AS per rank: the measured budget is the
  # address-space room (checked against the ranks' VmPeak), and an explicit budget of that number
  # places the same units and trains to the same bytes (test_gpt2_budget_free.sh).
  add_test(NAME gpt2_budget_free COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_budget_free.sh
                                         $<TARGET_FILE:train_gpt2> ${ZS_MPIEXEC})
  set_tests_properties(gpt2_budget_free PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                                                   LABELS "gpt2;mpi" PROCESSORS 2)
  add_test(NAME gpt2_precision COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_precision.sh
                                       $<TARGET_FILE:train_gpt2> ${ZS_MPIEXEC})
  set_tests_properties(gpt2_precision PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 180
                                                 LABELS "gpt2;mpi" PROCESSORS 2)
endif()

# GPU readiness (tests/gpu_tests.md): the example on the CUDA device against the same run on the
# CPU device (test_gpt2_cuda.sh; compare_gpt2_runs.py holds the bounds and their reasons), fp32
# and bf16, at 1 rank (stage 0) and 2 ranks sharing the GPU through NCCL (stage 3). Without a GPU
# they print "SKIP: no CUDA device" (zs_cuda_probe, tests/engine/engine.cmake).
# gpt2_cuda_compare_selftest runs on the CPU in every build: two CPU runs must agree exactly, the
# comparison must pass planted differences of 0.5x each bound and fail 2x, and a run with a 1.5x
# learning rate must fail it.
find_program(ZS_GPT2_PYTHON3 NAMES python3) # the comparison (standard library only)
if(ZS_BUILD_EXAMPLES AND ZS_GPT2_PYTHON3)
  add_test(NAME gpt2_cuda_compare_selftest
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_cuda.sh $<TARGET_FILE:train_gpt2_dump>
                   ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC} - 2 3 --self-test)
  set_tests_properties(gpt2_cuda_compare_selftest PROPERTIES
                       ENVIRONMENT "${ZS_TEST_ENV};PYTHON=${ZS_GPT2_PYTHON3}" TIMEOUT 120
                       LABELS "gpt2;mpi;python" PROCESSORS 2)
endif()
if(ZS_BUILD_EXAMPLES AND ZS_GPT2_PYTHON3 AND ZS_HAVE_CUDA)
  foreach(run "1;0;fp32" "1;0;bf16" "2;3;fp32" "2;3;bf16")
    list(GET run 0 np)
    list(GET run 1 stage)
    list(GET run 2 dtype)
    add_test(NAME gpt2_cuda_np${np}_${dtype}
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_gpt2_cuda.sh $<TARGET_FILE:train_gpt2_dump>
                     ${PROJECT_SOURCE_DIR} ${ZS_MPIEXEC} $<TARGET_FILE:zs_cuda_probe> ${np} ${stage} ${dtype})
    set_tests_properties(gpt2_cuda_np${np}_${dtype} PROPERTIES
                         ENVIRONMENT "${ZS_TEST_ENV};PYTHON=${ZS_GPT2_PYTHON3}" TIMEOUT 180
                         LABELS "gpt2;mpi;python;gpu" PROCESSORS ${np})
  endforeach()
endif()
