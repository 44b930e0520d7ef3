# install_consumer: `cmake --install` of this build into a temporary prefix, then a program outside
# the tree (tests/install/install_consumer) built against it with pkg-config and with find_package(zshard),
# and run under mpirun -np 1. Needs the library built first (ctest never builds).
add_test(NAME install_consumer
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_install.sh ${PROJECT_BINARY_DIR}
                 ${CMAKE_CURRENT_LIST_DIR}/install_consumer ${CMAKE_C_COMPILER} ${ZS_MPIEXEC})
set_tests_properties(install_consumer PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 300
                                                 LABELS "install" PROCESSORS 1)

# exports: libzshard.so and libzshard_kernels.so export their header's API and nothing else
# (hidden visibility + ZS_API; libzshard's API is zshard.h with zshard_facts.h), contain no test
# hook, and need one way: the kernels only libzshard's API, libzshard no zs_ symbol from outside.
get_target_property(zs_lib_type zshard TYPE)
if(zs_lib_type STREQUAL "SHARED_LIBRARY")
  add_test(NAME exports COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_exports.sh $<TARGET_FILE:zshard>
                                ${PROJECT_SOURCE_DIR}/include/zshard.h:${PROJECT_SOURCE_DIR}/include/zshard_facts.h)
  add_test(NAME exports_kernels
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_exports.sh $<TARGET_FILE:zshard_kernels>
                   ${PROJECT_SOURCE_DIR}/include/zshard_kernels.h
                   ${PROJECT_SOURCE_DIR}/include/zshard.h:${PROJECT_SOURCE_DIR}/include/zshard_facts.h)
  set_tests_properties(exports exports_kernels PROPERTIES LABELS "install" TIMEOUT 60)
endif()
