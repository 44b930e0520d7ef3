# The repository's scripts as the GPU machine runs them (label "scripts"): the PyTorch and
# transformers finders give up at once without a network (tests/gpt2 skips instead of hanging).
add_test(NAME ensure_offline COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_ensure_offline.sh
                                      ${PROJECT_SOURCE_DIR})
set_tests_properties(ensure_offline PROPERTIES LABELS "unit;scripts" TIMEOUT 300 SKIP_RETURN_CODE 77)
