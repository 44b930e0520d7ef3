# Engine tests: training equivalence across world sizes and stages, the memory ledger, bad input,
# a stuck peer.
zs_exe(test_engine_train SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_train.c)

function(zs_engine_equiv name n stage mode)
  cmake_parse_arguments(A "" "RUN_ARGS" "" ${ARGN})
  add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/engine_equiv.sh ${ZS_MPIEXEC}
                                $<TARGET_FILE:test_engine_train> ${n} ${stage} ${mode} ${A_UNPARSED_ARGUMENTS})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};EQUIV_RUN_ARGS=${A_RUN_ARGS}" TIMEOUT 120
                                          LABELS "mpi;engine" PROCESSORS ${n})
endfunction()

foreach(stage 0 1 2 3)
  zs_mpi_test(engine_train_np1_stage${stage} test_engine_train NP 1 ARGS --stage ${stage} --micro 2 LABELS engine)
  foreach(n 2 3 4)
    zs_engine_equiv(engine_det_np${n}_stage${stage} ${n} ${stage} det)
  endforeach()
  zs_engine_equiv(engine_nondet_np3_stage${stage} 3 ${stage} nondet)
endforeach()
# zs_config_default's AdamW (no field set) against the update and defaults zshard.h documents.
zs_mpi_test(engine_train_np1_adamw_defaults test_engine_train NP 1 ARGS --stage 3 --defaults 1 --steps 12 LABELS engine)
# No prefetch, deeper prefetch, clipping off, hybrid sharding, bf16, a non-finite gradient.
zs_engine_equiv(engine_det_np4_stage3_noprefetch 4 3 det --prefetch 0)
zs_engine_equiv(engine_det_np4_stage3_prefetch3 4 3 det --prefetch 3)
zs_engine_equiv(engine_det_np2_stage2_noclip 2 2 det --clip 0)
zs_engine_equiv(engine_det_np4_stage3_hybrid2 4 3 det --group 2)
zs_engine_equiv(engine_det_np4_stage1_hybrid2 4 1 det --group 2)
zs_mpi_test(engine_train_np4_stage3_hybrid_nondet test_engine_train NP 4 ARGS --stage 3 --det 0 --group 2 LABELS engine)
zs_mpi_test(engine_train_np2_stage3_bf16 test_engine_train NP 2 ARGS --stage 3 --bf16 1 --reftol 3e-2 LABELS engine)
zs_mpi_test(engine_train_np2_stage0_bf16 test_engine_train NP 2 ARGS --stage 0 --bf16 1 --det 0 --reftol 3e-2 LABELS engine)
zs_mpi_test(engine_train_np3_stage2_nonfinite test_engine_train NP 3 ARGS --stage 2 --skip-nonfinite-at 2 LABELS engine)
zs_mpi_test(engine_train_np2_stage3_micro3 test_engine_train NP 2 ARGS --stage 3 --micro 3 --det 0 LABELS engine)

zs_exe(test_engine_memory SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_memory.c)
foreach(n 1 2 4)
  zs_mpi_test(engine_memory_np${n} test_engine_memory NP ${n} LABELS engine)
endforeach()
# Lookup by name and whole-model set/get from an llm.c-style layout, stages 0-3.
zs_exe(test_engine_params_bulk SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_params_bulk.c)
foreach(n 1 2 3 4)
  zs_mpi_test(engine_params_bulk_np${n} test_engine_params_bulk NP ${n} LABELS engine)
endforeach()
zs_exe(test_engine_errors SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_errors.c)
zs_mpi_test(engine_errors test_engine_errors NP 1 LABELS engine)
zs_exe(test_engine_timeout SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_timeout.c)
zs_mpi_test(engine_timeout_np3 test_engine_timeout NP 3 TIMEOUT 60 LABELS engine)

# Offload: deterministic runs with offload on (N ranks) and off (1 rank x N micro-steps) give
# identical bits. 1 = optimizer, 2 = params, 3 = both.
foreach(n 1 2 4)
  foreach(stage 1 2 3)
    zs_engine_equiv(engine_offload_opt_np${n}_stage${stage} ${n} ${stage} det RUN_ARGS "--offload 1")
  endforeach()
  zs_engine_equiv(engine_offload_all_np${n}_stage3 ${n} 3 det RUN_ARGS "--offload 3")
endforeach()
zs_engine_equiv(engine_offload_params_np2_stage3 2 3 det RUN_ARGS "--offload 2")
zs_mpi_test(engine_offload_np2_stage3_bf16 test_engine_train NP 2 ARGS --stage 3 --bf16 1 --offload 3 --reftol 3e-2 LABELS engine offload)

# GPU: the same equivalence on the CUDA device. The 1-rank reference runs on the CPU device, so
# this also proves the CUDA kernels give the CPU's bits. Without a GPU the CUDA run prints one SKIP
# line and passes. Several ranks share the one GPU through the host-staged MPI backend.
if(ZS_HAVE_CUDA)
  target_link_libraries(test_engine_train PRIVATE CUDA::cudart)
  foreach(stage 0 1 2 3)
    zs_engine_equiv(engine_cuda_det_np2_stage${stage} 2 ${stage} det RUN_ARGS "--device cuda")
  endforeach()
  zs_engine_equiv(engine_cuda_offload_np2_stage3 2 3 det RUN_ARGS "--device cuda --offload 3")
  zs_mpi_test(engine_cuda_np2_stage3_bf16 test_engine_train NP 2 ARGS --device cuda --stage 3 --bf16 1 --reftol 3e-2 LABELS engine gpu)
  zs_mpi_test(engine_cuda_np1_stage0_bf16 test_engine_train NP 1 ARGS --device cuda --stage 0 --bf16 1 --reftol 3e-2 LABELS engine gpu)
  set_tests_properties(engine_cuda_det_np2_stage0 engine_cuda_det_np2_stage1 engine_cuda_det_np2_stage2
                       engine_cuda_det_np2_stage3 engine_cuda_offload_np2_stage3 PROPERTIES LABELS "mpi;engine;gpu")
endif()
if(ZS_HAVE_CUDA)
  # NCCL refuses two ranks on one GPU: the multi-rank GPU tests use the host-staged MPI backend.
  set_property(TEST engine_cuda_det_np2_stage0 engine_cuda_det_np2_stage1 engine_cuda_det_np2_stage2
               engine_cuda_det_np2_stage3 engine_cuda_offload_np2_stage3 engine_cuda_np2_stage3_bf16
               APPEND PROPERTY ENVIRONMENT ZS_COMM=mpi)
endif()

if(ZS_HAVE_CUDA)
  # The NCCL path with two ranks on one GPU: each rank gets its own NCCL_HOSTID (sockets).
  zs_engine_equiv(engine_cuda_nccl_np2_stage3 2 3 det RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_nccl_np2_stage1 2 1 nondet RUN_ARGS "--device cuda")
  set_property(TEST engine_cuda_nccl_np2_stage3 engine_cuda_nccl_np2_stage1 APPEND PROPERTY ENVIRONMENT
               "EQUIV_RUN_PREFIX=env ZS_COMM=nccl ${ZS_TESTS_DIR}/with_hostid.sh")
  set_property(TEST engine_cuda_nccl_np2_stage3 engine_cuda_nccl_np2_stage1 APPEND PROPERTY LABELS gpu)
endif()

# bucket_bytes cuts reductions into pieces (tiny buckets: many pieces, packing, hybrid): the bits
# must equal the unbucketed 1-rank reference.
foreach(stage 0 1 2 3)
  zs_engine_equiv(engine_bucket_np3_stage${stage} 3 ${stage} det RUN_ARGS "--bucket 40")
endforeach()
zs_engine_equiv(engine_bucket_np4_stage3_hybrid 4 3 det RUN_ARGS "--bucket 64 --group 2")
zs_engine_equiv(engine_bucket_nondet_np4_stage2 4 2 nondet RUN_ARGS "--bucket 48")
zs_engine_equiv(engine_bucket_nondet_np4_stage3_hybrid 4 3 nondet RUN_ARGS "--bucket 48 --group 2")
zs_engine_equiv(engine_bucket_nondet_np2_stage0 2 0 nondet RUN_ARGS "--bucket 40")

# Reduction dtype differing from the params (conversion into a reduce buffer and back).
zs_mpi_test(engine_train_np3_stage2_bf16_reduce_f32 test_engine_train NP 3 ARGS --stage 2 --bf16 1 --reduce-bf16 0 --reftol 3e-2 LABELS engine)
# bf16 sums of cancelling gradients can flip a near-zero mean's sign, and Adam then moves that
# parameter by a full lr (0.05) the other way: hence the looser bound.
zs_mpi_test(engine_train_np3_stage3_f32_reduce_bf16 test_engine_train NP 3 ARGS --stage 3 --det 0 --reduce-bf16 1 --reftol 0.1 LABELS engine)
zs_mpi_test(engine_train_np2_stage0_f32_reduce_bf16 test_engine_train NP 2 ARGS --stage 0 --reduce-bf16 1 --reftol 3e-2 LABELS engine)
zs_mpi_test(engine_train_np4_stage1_bf16_reduce_f32_bucket test_engine_train NP 4 ARGS --stage 1 --bf16 1 --reduce-bf16 0 --bucket 64 --reftol 3e-2 LABELS engine)


# Randomized call sequences (tests/engine/test_engine_protocol.c): the stage-3 memory rule after every
# call and bit-equality with a 1-rank stage-0 replay. ZS_PROTOCOL_SEQS=N runs N per world size.
zs_exe(test_engine_protocol SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_protocol.c)
foreach(n 1 2 3 4)
  zs_mpi_test(engine_protocol_np${n} test_engine_protocol NP ${n} TIMEOUT 300 LABELS engine)
endforeach()
# One regression test per stage-3 defect (eval/sampling gathers, stale set_param, max_live,
# hybrid deterministic scratch, commit fit check, offload worker split).
zs_exe(test_engine_rules SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_rules.c)
foreach(n 1 2 4)
  zs_mpi_test(engine_rules_np${n} test_engine_rules NP ${n} LABELS engine)
endforeach()

# GPU tier of the stage-3 promises: the engine's pool keeps its memory between steps, a gather
# waits for its own all-gather only (reductions overlap), a host wait behind a collective of a
# silent peer times out. Two ranks share the GPU through NCCL with per-rank NCCL_HOSTID.
if(ZS_HAVE_CUDA)
  zs_exe(test_engine_cuda_rules SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_cuda_rules.c
         LIBS CUDA::cudart)
  zs_mpi_test(engine_cuda_pool test_engine_cuda_rules NP 1 ARGS pool LABELS engine gpu)
  set_tests_properties(engine_cuda_pool PROPERTIES RESOURCE_LOCK gpu) # reads the GPU's free memory
  foreach(mode overlap timeout)
    add_test(NAME engine_cuda_${mode}
             COMMAND ${ZS_MPIEXEC} --oversubscribe -np 2 ${ZS_TESTS_DIR}/with_hostid.sh
                     $<TARGET_FILE:test_engine_cuda_rules> ${mode})
    set_tests_properties(engine_cuda_${mode} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_COMM=nccl"
                         TIMEOUT 120 LABELS "mpi;engine;gpu" PROCESSORS 2 RESOURCE_LOCK gpu)
  endforeach()
endif()


# Sharding switches beyond the stages: params sharded (gathered just in time) with full gradients
# and sharded optimizer state (stage 1 plus shard_params), with and without offloaded params and
# optimizer; deterministic N ranks must give the 1-rank stage-1 bits.
foreach(n 2 3 4)
  zs_engine_equiv(engine_switch_params_np${n} ${n} 1 det RUN_ARGS "--shard-params 1")
endforeach()
zs_engine_equiv(engine_switch_params_offload_np2 2 1 det RUN_ARGS "--shard-params 1 --offload 3")
zs_engine_equiv(engine_switch_explicit_np3 3 0 det
                RUN_ARGS "--shard-params 1 --shard-grads 1 --shard-optimizer 1")

# Deterministic mode stages each micro-step's gradient: a backward that adds in several += still
# gives the 1-rank bits at every stage (full gradients at stages 0-1 need the staging).
foreach(stage 0 1 2 3)
  zs_engine_equiv(engine_split_adds_np3_stage${stage} 3 ${stage} det --split-adds 1)
endforeach()
zs_engine_equiv(engine_switch_no_grads_np2 2 1 det RUN_ARGS "--stage 3 --shard-grads 2")


