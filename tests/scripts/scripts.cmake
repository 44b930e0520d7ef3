# The repository's scripts as the GPU machine runs them (label "scripts"): the PyTorch and
# transformers finders give up at once without a network (tests/gpt2 skips instead of hanging).
add_test(NAME ensure_offline COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_ensure_offline.sh
                                      ${PROJECT_SOURCE_DIR})
set_tests_properties(ensure_offline PROPERTIES LABELS "unit;scripts" TIMEOUT 300 SKIP_RETURN_CODE 77)
# Every test that uses CUDA or NCCL is marked as a GPU test (label, lock, skip expression).
if(Python3_Interpreter_FOUND OR ZS_PYTHON3)
  find_program(ZS_TEST_PYTHON3 NAMES python3)
  add_test(NAME gpu_tests_marked COMMAND ${ZS_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_gpu_tests.py
                                         ${PROJECT_BINARY_DIR})
  set_tests_properties(gpu_tests_marked PROPERTIES LABELS "unit;scripts" TIMEOUT 60)
endif()
# Every tracked script is executable in git: a clean clone (CI, the GPU machine) gets git's modes.
add_test(NAME scripts_executable COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_exec_bits.sh
                                          ${PROJECT_SOURCE_DIR})
set_tests_properties(scripts_executable PROPERTIES LABELS "unit;scripts" TIMEOUT 60 SKIP_RETURN_CODE 77)
# scripts/ctest-junit-summary.py (device-first.sh's verdicts) against JUnit reports ctest writes.
if(ZS_TEST_PYTHON3)
  add_test(NAME junit_summary COMMAND ${ZS_TEST_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/test_junit_summary.py
                                      ${PROJECT_SOURCE_DIR})
  set_tests_properties(junit_summary PROPERTIES LABELS "unit;scripts" TIMEOUT 120)
endif()
# cmake/ZsNccl.cmake against fake NCCL installations (NCCL_ROOT, NCCL_HOME, the pip wheel).
add_test(NAME find_nccl COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_find_nccl.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(find_nccl PROPERTIES LABELS "unit;scripts" TIMEOUT 120)
# bench/capacity.sh's search (largest_fitting) against planted answers and starts: the exact
# answer, no probe outside the range or repeated, two probes from an exact prediction.
add_test(NAME capacity_bisect COMMAND bash ${PROJECT_SOURCE_DIR}/bench/capacity.sh --self-test)
set_tests_properties(capacity_bisect PROPERTIES LABELS "unit;scripts" TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "capacity self-test: [0-9]+ cases OK")
