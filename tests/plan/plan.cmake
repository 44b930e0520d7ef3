# The memory planner: zs_plan_model against the ledger of a real engine (a dozen configurations
# on 1, 2 and 4 ranks), and the zshard-plan tool against the ZeRO paper's figures, hand-derived
# --recommend orders and refusal sentences, and the GPT-2 example's own activation bytes.
zs_exe(test_plan_ledger SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_plan_ledger.c)
foreach(n 1 2 4)
  zs_mpi_test(plan_ledger_np${n} test_plan_ledger NP ${n} LABELS engine)
endforeach()
if(ZS_BUILD_EXAMPLES) # both compare with examples/train_gpt2
  add_test(NAME plan_tool COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_plan_tool.sh
                                  $<TARGET_FILE:zshard-plan> $<TARGET_FILE:train_gpt2> ${ZS_MPIEXEC})
  set_tests_properties(plan_tool PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" SKIP_RETURN_CODE 77 TIMEOUT 120
                                            LABELS "mpi;engine" PROCESSORS 2)
  # The stage-comparison benchmark on 2 ranks (8 configurations): it exits non-zero unless model
  # states and activations equal the plan and every total is within 1% (bench/RESULTS.md has the
  # full run on 1, 2 and 4 ranks).
  add_test(NAME plan_bench_stages_np2
           COMMAND python3 ${PROJECT_SOURCE_DIR}/bench/stages.py --build ${PROJECT_BINARY_DIR}
                   --out ${CMAKE_CURRENT_BINARY_DIR}/stages --worlds 2)
  set_tests_properties(plan_bench_stages_np2 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 180
                                                        LABELS "mpi;engine" PROCESSORS 2)
endif()
# zshard-plan's Llama-family presets and --model config.json (published totals, config files).
add_test(NAME plan_llama COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_plan_llama.sh
                                 $<TARGET_FILE:zshard-plan>)
set_tests_properties(plan_llama PROPERTIES TIMEOUT 120 LABELS "unit")
