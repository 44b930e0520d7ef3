# Engine tests: training equivalence across world sizes and stages, the memory ledger, bad input,
# a stuck peer.
zs_exe(test_engine_train SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_train.c)

# splits: N (N ranks x 1 micro-step against 1 rank x N) or a list of RxM splits of one global
# batch; REF_STAGE: the stage of the 1-rank reference (default: the runs' stage); EXE: the program
# (default test_engine_train; another must take the same options, engine_equiv.sh).
function(zs_engine_equiv name splits stage mode)
  cmake_parse_arguments(A "" "RUN_ARGS;REF_STAGE;EXE" "" ${ARGN})
  if(NOT A_EXE)
    set(A_EXE test_engine_train)
  endif()
  set(np 1)
  foreach(s IN LISTS splits)
    string(REGEX REPLACE "x.*" "" r "${s}")
    if(r GREATER np)
      set(np ${r})
    endif()
  endforeach()
  string(REPLACE ";" " " splits_arg "${splits}")
  set(env "${ZS_TEST_ENV};EQUIV_RUN_ARGS=${A_RUN_ARGS}")
  if(DEFINED A_REF_STAGE)
    list(APPEND env "EQUIV_REF_STAGE=${A_REF_STAGE}")
  endif()
  add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/engine_equiv.sh ${ZS_MPIEXEC}
                                $<TARGET_FILE:${A_EXE}> ${splits_arg} ${stage} ${mode} ${A_UNPARSED_ARGUMENTS})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}" TIMEOUT 120
                                          LABELS "mpi;engine" PROCESSORS ${np})
endfunction()

foreach(stage 0 1 2 3)
  zs_mpi_test(engine_train_np1_stage${stage} test_engine_train NP 1 ARGS --stage ${stage} --micro 2 --groups 1 --empty 1 --state 1 --nograd 1 LABELS engine)
  foreach(n 2 3 4)
    zs_engine_equiv(engine_det_np${n}_stage${stage} ${n} ${stage} det)
  endforeach()
  zs_engine_equiv(engine_nondet_np3_stage${stage} 3 ${stage} nondet --peek 1)
endforeach()
# Any split of a global batch (ranks x micro-steps, micro-step m of rank r = global micro-batch
# m * ranks + r) gives the bits of 1 rank fed the micro-batches in that order, at stage 0 (so
# across stages too): every stage, offload, hybrid groups, bf16 params or reductions.
foreach(stage 0 1 2 3)
  zs_engine_equiv(engine_splits4_stage${stage} "1x4;2x2;4x1" ${stage} det REF_STAGE 0)
  zs_engine_equiv(engine_splits6_stage${stage} "1x6;2x3;3x2" ${stage} det REF_STAGE 0 --empty 1)
  zs_engine_equiv(engine_splits4_stage${stage}_bf16 "2x2;4x1" ${stage} det REF_STAGE 0 --bf16 1 --reftol 3e-2)
endforeach()
zs_engine_equiv(engine_splits4_stage3_offload "1x4;2x2;4x1" 3 det REF_STAGE 0 RUN_ARGS "--offload 3" --groups 1 --peek 1 --set-grad 1 --state 1 --nograd 1)
# fp32 accumulation of bf16 gradients (zs_config.grad_accum_fp32): after one step of 4 micro-steps,
# m and v are those of the float64 sum of the backward's bf16 micro-batch gradients to 1e-7 (with
# bf16 accumulation 120 elements miss by up to 1e-4); every stage, offload, SGD, Lion in lean mode;
# any split gives the bits of the 1-rank run.
foreach(stage 0 1 2 3)
  zs_mpi_test(engine_accum_fp32_np2_stage${stage} test_engine_train NP 2 ARGS --stage ${stage} --bf16 1 --micro 4 --steps 1 --state 1 --accum-fp32 1 --reftol 1e-2 --statetol 1e-7 LABELS engine)
endforeach()
# Full gradients outside deterministic mode: summed locally in fp32, reduced once (fp32).
foreach(stage 0 1)
  zs_mpi_test(engine_accum_fp32_np3_stage${stage}_nondet test_engine_train NP 3 ARGS --stage ${stage} --det 0 --reduce-bf16 0 --bf16 1 --micro 4 --steps 1 --state 1 --peek 1 --accum-fp32 1 --reftol 1e-2 --statetol 1e-7 LABELS engine)
endforeach()
zs_mpi_test(engine_accum_fp32_np2_stage3_offload_sgd test_engine_train NP 2 ARGS --stage 3 --offload 3 --det 0 --reduce-bf16 0 --sgd 0.9 --bf16 1 --micro 4 --steps 1 --state 1 --accum-fp32 1 --reftol 1e-2 --statetol 1e-7 LABELS engine offload)
# Muon (--muon: the matrices in a group on it beside AdamW): against the float64 reference at one
# rank (a wide matrix beside a tall one: --wide), and bit for bit across splits, stages, world
# sizes (whichever rank orthogonalises a matrix), offloaded, hybrid, with bf16 moments and in lean
# mode.
zs_mpi_test(engine_train_np1_muon test_engine_train NP 1 ARGS --stage 3 --micro 2 --muon 1 --state 1 --nograd 1 --wide 1 LABELS engine)
zs_engine_equiv(engine_muon_splits4_stage3_offload "1x4;2x2;4x1" 3 det REF_STAGE 0 RUN_ARGS "--offload 3" --muon 1 --state 1)
zs_engine_equiv(engine_muon_splits4_stage1_m16 "2x2;4x1" 1 det REF_STAGE 0 --muon 2 --moments-bf16 1 --reftol 5e-4)
zs_engine_equiv(engine_muon_det_np4_stage2_hybrid2 4 2 det --muon 1 --group 2)
zs_engine_equiv(engine_muon_lean_np2_stage3 2 3 det REF_STAGE 0 --muon 1 --bf16 1 --master 3 --reftol 3e-2)
# Adafactor (--adafactor: two matrices and two vectors in a group on it beside AdamW): against the
# float64 reference, and bit for bit across splits, stages and world sizes, offloaded, hybrid and
# with bf16 state.
zs_mpi_test(engine_train_np1_adafactor test_engine_train NP 1 ARGS --stage 3 --micro 2 --adafactor 1 --state 1 --nograd 1 LABELS engine)
zs_engine_equiv(engine_adafactor_splits4_stage3_offload "1x4;2x2;4x1" 3 det REF_STAGE 0 RUN_ARGS "--offload 3" --adafactor 1 --state 1)
zs_engine_equiv(engine_adafactor_det_np4_stage1_hybrid2_m16 4 1 det --adafactor 1 --group 2 --moments-bf16 1 --reftol 5e-4)
# Each group its own optimizer (--groups 2: Lion and SGD beside AdamW), with offload and in lean
# mode.
zs_mpi_test(engine_group_opts_np2_stage3_offload test_engine_train NP 2 ARGS --stage 3 --offload 3 --micro 2 --groups 2 --state 1 LABELS engine offload)
zs_mpi_test(engine_group_opts_np2_stage1_lean test_engine_train NP 2 ARGS --stage 1 --master 3 --bf16 1 --groups 2 --reftol 3e-2 LABELS engine)
# GPU: SGD and Lion on CUDA (the CUDA codec, src/optim/codec_cuda.cuh) beside AdamW against the
# 1-rank CPU run bit for bit, with an fp32 master at stage 3, in lean mode with bf16 state, with
# the remainder master, and SGD with Nesterov momentum alone; two ranks share the GPU through the
# host-staged MPI backend.
if(ZS_HAVE_CUDA)
  zs_engine_equiv(engine_cuda_group_opts_np2_stage3 2 3 det --groups 2 --state 1 RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_group_opts_lean_m16_np2_stage1 2 1 det --groups 2 --bf16 1 --master 3 --moments-bf16 1 --reftol 3e-2 RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_group_opts_rem_np2_stage2 2 2 det --groups 2 --bf16 1 --master 2 --reftol 3e-2 RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_sgd_nesterov_np1_stage0 1 0 det --sgd 0.9 --nesterov 1 --state 1 RUN_ARGS "--device cuda")
  # Lion in lean mode with fp32 gradient accumulation: the codec's packed modes with an fp32
  # gradient (bit for bit against the CPU).
  zs_engine_equiv(engine_cuda_accum_fp32_lion_lean_np2_stage1 2 1 det --lion 1 --master 3 --bf16 1 --accum-fp32 1 --reftol 1e-2 RUN_ARGS "--device cuda")
  # Muon on CUDA (its gather and update bit-identical to the CPU's, Newton-Schulz through
  # cuBLAS): against the float64 reference at one rank, a wide and a tall matrix (cuBLAS's sums
  # in another order than OpenBLAS's: 1e-4 instead of 2e-5), and 2 ranks at stage 3 against 1
  # rank, both on CUDA, bit for bit (the owner of a matrix's step never changes the bits); bf16
  # moments with --muon 2's settings (momentum 0.9 without Nesterov, 3 steps, the AdamW-matched
  # lr) at stage 1.
  zs_mpi_test(engine_cuda_train_np1_muon test_engine_train NP 1 ARGS --device cuda --stage 0 --muon 1 --state 1 --wide 1 --reftol 1e-4 LABELS engine gpu)
  zs_engine_equiv(engine_cuda_muon_np2_stage3 2 3 det --device cuda --muon 1 --state 1 --reftol 1e-4)
  zs_engine_equiv(engine_cuda_muon_m16_np2_stage1 2 1 det --device cuda --muon 2 --moments-bf16 1 --reftol 5e-4)
  # Muon in lean mode (its update reads the whole step's fp32 direction into bf16 params).
  zs_engine_equiv(engine_cuda_muon_lean_np2_stage3 2 3 det --device cuda --muon 1 --bf16 1 --master 3 --reftol 3e-2)
  # Adafactor on CUDA the same ways (its sums in double in fixed trees on the GPU, in element
  # order on the CPU); at stage 3 the shards cut the factors' prefix, so the device steps meet
  # pieces with no state.
  zs_mpi_test(engine_cuda_train_np1_adafactor test_engine_train NP 1 ARGS --device cuda --stage 0 --adafactor 1 --state 1 --reftol 1e-4 LABELS engine gpu)
  zs_engine_equiv(engine_cuda_adafactor_np2_stage3 2 3 det --device cuda --adafactor 1 --state 1 --reftol 1e-4)
  zs_engine_equiv(engine_cuda_adafactor_m16_np2_stage1 2 1 det --device cuda --adafactor 1 --moments-bf16 1 --bf16 1 --reftol 3e-2)
  set(zs_cuda_opts engine_cuda_group_opts_np2_stage3 engine_cuda_group_opts_lean_m16_np2_stage1
                   engine_cuda_group_opts_rem_np2_stage2 engine_cuda_sgd_nesterov_np1_stage0
                   engine_cuda_train_np1_muon engine_cuda_muon_np2_stage3
                   engine_cuda_muon_m16_np2_stage1 engine_cuda_train_np1_adafactor
                   engine_cuda_adafactor_np2_stage3 engine_cuda_adafactor_m16_np2_stage1
                   engine_cuda_accum_fp32_lion_lean_np2_stage1
                   engine_cuda_muon_lean_np2_stage3)
  set_property(TEST ${zs_cuda_opts} APPEND PROPERTY ENVIRONMENT ZS_COMM=mpi)
  set_property(TEST ${zs_cuda_opts} APPEND PROPERTY LABELS gpu)
endif()
zs_mpi_test(engine_accum_fp32_np2_stage1_lion_lean test_engine_train NP 2 ARGS --stage 1 --lion 1 --master 3 --bf16 1 --micro 4 --steps 1 --state 1 --accum-fp32 1 --reftol 1e-2 --statetol 1e-7 LABELS engine)
zs_engine_equiv(engine_accum_fp32_splits4_stage2 "1x4;2x2;4x1" 2 det REF_STAGE 0 --bf16 1 --accum-fp32 1 --reftol 3e-2)
zs_engine_equiv(engine_splits6_stage1_offload_opt "2x3;3x2" 1 det REF_STAGE 0 RUN_ARGS "--offload 1")
foreach(stage 1 3)
  zs_engine_equiv(engine_splits8_stage${stage}_hybrid2 "4x2" ${stage} det REF_STAGE 0 --group 2)
endforeach()
zs_engine_equiv(engine_splits6_stage2_bf16_reduce_f32 "2x3;3x2" 2 det REF_STAGE 0 --bf16 1 --reduce-bf16 0 --reftol 3e-2)
zs_engine_equiv(engine_splits4_stage1_f32_reduce_bf16 "2x2;4x1" 1 det REF_STAGE 0 --reduce-bf16 1 --reftol 0.1)
zs_engine_equiv(engine_splits6_stage0_bucket "2x3;3x2" 0 det REF_STAGE 0 RUN_ARGS "--bucket 40")

# zs_config_default's AdamW (no field set) against the update and defaults zshard.h documents.
zs_mpi_test(engine_train_np1_adamw_defaults test_engine_train NP 1 ARGS --stage 3 --defaults 1 --steps 12 LABELS engine)
# Optimizer-state precision (zs_config.master, ...): each mode against the float64 reference,
# and split across ranks and stages against the default mode's 1-rank run (ZS_MASTER_PARAMS is
# exactly ZS_MASTER_FP32 with fp32 params: the same bits).
zs_mpi_test(engine_train_np1_adamw_defaults_master_params test_engine_train NP 1 ARGS --stage 3 --defaults 1 --steps 12 --master 1 LABELS engine)
foreach(stage 0 1 2 3)
  zs_engine_equiv(engine_splits4_stage${stage}_master_params "1x4;2x2;4x1" ${stage} det REF_STAGE 0 RUN_ARGS "--master 1")
endforeach()
# bf16 moments: the float64 reference rounds m and v to bf16 as the engine stores them (a value
# the two round differently moves by one bf16 ulp: hence the looser tolerance); splits and stages
# bit for bit within the mode.
zs_mpi_test(engine_train_np1_adamw_defaults_moments_bf16 test_engine_train NP 1 ARGS --stage 3 --defaults 1 --steps 12 --moments-bf16 1 --reftol 5e-5 LABELS engine)
foreach(stage 0 1 2 3)
  zs_engine_equiv(engine_splits4_stage${stage}_moments_bf16 "1x4;2x2;4x1" ${stage} det REF_STAGE 0 --moments-bf16 1 --reftol 5e-4)
endforeach()
zs_engine_equiv(engine_splits4_stage3_moments_bf16_master_params "2x2;4x1" 3 det REF_STAGE 0 --moments-bf16 1 --master 1 --reftol 5e-4)
zs_engine_equiv(engine_splits6_stage2_master_params_bucket "2x3;3x2" 2 det REF_STAGE 0 RUN_ARGS "--master 1 --bucket 40")
# Lean mode (ZS_MASTER_LEAN: the bf16 params are the master, stochastic rounding keyed by the
# step, the unit and the element's offset in it): against a float64 AdamW that rounds p with the
# same bits (written in the test from zshard.h's definition; the engine's fp32 arithmetic and bf16
# gradients leave it a hair apart: 5e-4 relative is well under one bf16 ulp, 2^-8), and bit for bit
# across world sizes 1, 2, 4, stages 0-3, splits, hybrid groups, buckets and bf16 moments (the
# rounding's bits do not depend on sharding).
zs_mpi_test(engine_train_np1_adamw_defaults_lean test_engine_train NP 1 ARGS --stage 3 --bf16 1 --master 3 --defaults 1 --steps 12 --reftol 5e-4 --nograd 1 LABELS engine)
foreach(stage 0 1 2 3)
  zs_engine_equiv(engine_splits4_stage${stage}_lean "1x4;2x2;4x1" ${stage} det REF_STAGE 0 --bf16 1 --master 3 --reftol 3e-2)
endforeach()
zs_engine_equiv(engine_splits4_stage2_lean_moments_bf16 "1x4;2x2;4x1" 2 det REF_STAGE 0 --bf16 1 --master 3 --moments-bf16 1 --reftol 3e-2)
zs_engine_equiv(engine_splits8_stage3_lean_hybrid2 "4x2" 3 det REF_STAGE 0 --bf16 1 --master 3 --group 2 --reftol 3e-2)
# Lean mode against a float64 reference of exactly its algorithm, training next to fp32-master
# (least squares: losses within the bound bf16 params allow), checkpoints both ways across modes
# and stages, and a resumed lean run continuing the same rounding stream.
zs_exe(test_engine_lean SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_lean.c)
zs_mpi_test(engine_lean_np1 test_engine_lean NP 1 ARGS --stage 0 --load-stage 3 --dir ${CMAKE_CURRENT_BINARY_DIR}/engine_lean_np1 LABELS engine)
zs_mpi_test(engine_lean_np2 test_engine_lean NP 2 ARGS --stage 3 --load-stage 0 --dir ${CMAKE_CURRENT_BINARY_DIR}/engine_lean_np2 LABELS engine)
zs_mpi_test(engine_lean_np3 test_engine_lean NP 3 ARGS --stage 2 --load-stage 1 --dir ${CMAKE_CURRENT_BINARY_DIR}/engine_lean_np3 LABELS engine)
zs_engine_equiv(engine_splits6_stage1_lean_bucket "2x3;3x2" 1 det REF_STAGE 0 --bf16 1 --master 3 --reftol 3e-2 RUN_ARGS "--bucket 40")
# GPU: lean mode on CUDA against the 1-rank CPU run bit for bit (the CUDA twin draws lean.h's bits
# and rounds with its functions); two ranks share the GPU through the host-staged MPI backend.
if(ZS_HAVE_CUDA)
  foreach(stage 1 3)
    zs_engine_equiv(engine_cuda_lean_np2_stage${stage} 2 ${stage} det --bf16 1 --master 3 --reftol 3e-2 RUN_ARGS "--device cuda")
  endforeach()
  zs_engine_equiv(engine_cuda_lean_m16_np2_stage2 2 2 det --bf16 1 --master 3 --moments-bf16 1 --reftol 3e-2 RUN_ARGS "--device cuda")
  set_property(TEST engine_cuda_lean_np2_stage1 engine_cuda_lean_np2_stage3 engine_cuda_lean_m16_np2_stage2
               APPEND PROPERTY ENVIRONMENT ZS_COMM=mpi)
  set_property(TEST engine_cuda_lean_np2_stage1 engine_cuda_lean_np2_stage3 engine_cuda_lean_m16_np2_stage2
               APPEND PROPERTY LABELS gpu)
endif()
# No prefetch, deeper prefetch, clipping off, hybrid sharding, bf16, a non-finite gradient.
zs_engine_equiv(engine_det_np4_stage3_noprefetch 4 3 det --prefetch 0)
zs_engine_equiv(engine_det_np4_stage3_prefetch3 4 3 det --prefetch 3)
zs_engine_equiv(engine_det_np2_stage2_noclip 2 2 det --clip 0)
zs_engine_equiv(engine_det_np4_stage3_hybrid2 4 3 det --group 2)
zs_engine_equiv(engine_det_np4_stage1_hybrid2 4 1 det --group 2 --peek 1 --set-grad 1)
zs_mpi_test(engine_train_np4_stage3_hybrid_nondet test_engine_train NP 4 ARGS --stage 3 --det 0 --group 2 --peek 1 LABELS engine)
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
# Values set differently on each rank (a per-rank seed) refused at the step, naming the tensor;
# zs_engine_broadcast_params as the remedy; no false positive (equal values, a checkpoint load).
zs_exe(test_engine_init_agree SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_init_agree.c)
zs_mpi_test(engine_init_agree_np2 test_engine_init_agree NP 2 TIMEOUT 60 LABELS engine)
# zs_engine_agree: one verdict, the failing ranks' own messages, the others naming the first.
zs_exe(test_engine_agree SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_agree.c)
zs_mpi_test(engine_agree_np3 test_engine_agree NP 3 TIMEOUT 60 LABELS engine)
zs_exe(test_engine_errors SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_errors.c)
zs_mpi_test(engine_errors test_engine_errors NP 1 LABELS engine)
# zshard_facts.h: zs_engine_facts_get, zs_config_origin, zs_unit_placed (refusals, origins, the
# budget's placement unit by unit) and zs_engine_info's words, checked against the facts.
zs_exe(test_engine_facts SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_facts.c)
zs_mpi_test(engine_facts test_engine_facts NP 1 LABELS engine)
zs_mpi_test(engine_facts_np2 test_engine_facts NP 2 LABELS engine)
zs_exe(test_engine_timeout SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_timeout.c)
# With the flight recorder on (ZS_FLIGHT_DIR), and tools/flight/zshard-flight reading the records
# of that stuck peer, of a divergence, and of made-up records (flight_test.sh).
add_test(NAME engine_timeout_np3 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/flight_test.sh ${ZS_MPIEXEC}
                                         $<TARGET_FILE:test_engine_timeout>
                                         ${PROJECT_SOURCE_DIR}/tools/flight/zshard-flight
                                         ${ZS_FLIGHT_PYTHON3})
set_tests_properties(engine_timeout_np3 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                                                   LABELS "mpi;engine" PROCESSORS 3)

# Offload: deterministic runs with offload on (N ranks) and off (1 rank x N micro-steps) give
# identical bits. 1 = optimizer, 2 = params, 3 = both.
foreach(n 1 2 4)
  foreach(stage 1 2 3)
    zs_engine_equiv(engine_offload_opt_np${n}_stage${stage} ${n} ${stage} det RUN_ARGS "--offload 1")
  endforeach()
  zs_engine_equiv(engine_offload_all_np${n}_stage3 ${n} 3 det RUN_ARGS "--offload 3" --empty 1)
endforeach()
zs_engine_equiv(engine_offload_params_np2_stage3 2 3 det RUN_ARGS "--offload 2")
zs_mpi_test(engine_offload_np2_stage3_bf16 test_engine_train NP 2 ARGS --stage 3 --bf16 1 --offload 3 --reftol 3e-2 LABELS engine offload)

# Budgeted partial offload: a budget 0.2 of the way from all-on-the-host to none (the two largest
# units on the host, the two smallest on the device, each side with a tensor exempt from weight
# decay; as zs_plan_placement says and zs_engine_info shows) gives the
# bits of the 1-rank run without offload, which the offload tests above tie to all-offloaded
# runs; at stage 3 the param shards of the host units move too. Also the extremes (0: every unit
# on the host, 1: none) and one more cut (0.1: all but the smallest).
foreach(n 1 2 3 4)
  foreach(stage 1 3)
    zs_engine_equiv(engine_budget_np${n}_stage${stage} ${n} ${stage} det RUN_ARGS "--budget-frac 0.2")
  endforeach()
endforeach()
foreach(f 0 0.1 1)
  zs_engine_equiv(engine_budget_np2_stage2_f${f} 2 2 det RUN_ARGS "--budget-frac ${f}")
endforeach()
zs_engine_equiv(engine_budget_splits4_stage3 "1x4;2x2;4x1" 3 det REF_STAGE 0 RUN_ARGS "--budget-frac 0.1" --groups 1)
# offload_budget_bytes = ZS_BUDGET_FREE: each rank's measurement planted (a different number per
# rank), the least becomes the budget on every rank, the placement is an explicit budget's of that
# number (and trains to its bits); a rank measuring nothing refuses everywhere; the real
# measurement is positive.
zs_exe(test_engine_budget_free SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_budget_free.c)
foreach(n 2 3)
  zs_mpi_test(engine_budget_free_np${n} test_engine_budget_free NP ${n} LABELS engine offload)
endforeach()
# The same through the equivalence runs: a measured budget gives the bits of the 1-rank run
# without offload.
zs_engine_equiv(engine_budget_free_equiv_np2_stage3 2 3 det RUN_ARGS "--budget-free 1")

# The precision modes on the host tier (src/optim/adamw/host_update.c): each mode with offload bits
# (1 = optimizer, 3 = and params, 2 = params alone) and with a budget gives the bits of the same
# mode's run without offload (1 rank x N micro-steps). ZS_MASTER_PARAMS keeps an fp32 master in
# the arena where its params stay on the device (and on the device where they alone are on the
# host), the arena's params are the master where they move with it; bf16 moments live in the
# arena. The 1-rank reference also checks its mode against the float64 reference (hence --reftol
# with bf16 moments); test_engine_train checks the arena's bytes per element of each mode.
set(zs_hostmode_master_params --master 1)
set(zs_hostmode_moments_bf16 --moments-bf16 1 --reftol 5e-4)
set(zs_hostmode_both --master 1 --moments-bf16 1 --reftol 5e-4)
# The remainder master (the remainder and m, v in the arena, the bf16 params where the plan puts
# them) and lean mode (m and v in the arena, the bf16 params the master wherever they are: its
# stochastic rounding keyed by unit element, so the bits hold across ranks, stages, splits and
# tiers) with bf16 params; on the CPU device the host update runs in place on the params.
set(zs_hostmode_rem --bf16 1 --master 2 --reftol 3e-2)
set(zs_hostmode_lean --bf16 1 --master 3 --reftol 3e-2)
foreach(m master_params moments_bf16 both rem lean)
  set(margs ${zs_hostmode_${m}})
  foreach(ns "2;1" "2;2" "2;3" "4;1" "4;3" "1;3")
    list(GET ns 0 n)
    list(GET ns 1 stage)
    zs_engine_equiv(engine_hostmodes_${m}_opt_np${n}_stage${stage} ${n} ${stage} det ${margs} RUN_ARGS "--offload 1")
  endforeach()
  foreach(n 1 2 4)
    zs_engine_equiv(engine_hostmodes_${m}_all_np${n}_stage3 ${n} 3 det ${margs} RUN_ARGS "--offload 3")
  endforeach()
  zs_engine_equiv(engine_hostmodes_${m}_params_np2_stage3 2 3 det ${margs} RUN_ARGS "--offload 2")
  zs_engine_equiv(engine_hostmodes_${m}_splits4_stage3_all "2x2;4x1" 3 det REF_STAGE 0 ${margs} RUN_ARGS "--offload 3")
  foreach(ns "1;3" "2;1" "2;3" "3;1" "4;3")
    list(GET ns 0 n)
    list(GET ns 1 stage)
    zs_engine_equiv(engine_hostmodes_${m}_budget_np${n}_stage${stage} ${n} ${stage} det ${margs} RUN_ARGS "--budget-frac 0.2")
  endforeach()
  zs_engine_equiv(engine_hostmodes_${m}_budget_np2_stage2_f0 2 2 det ${margs} RUN_ARGS "--budget-frac 0")
  zs_engine_equiv(engine_hostmodes_${m}_budget_splits4_stage3 "1x4;2x2;4x1" 3 det REF_STAGE 0 ${margs} RUN_ARGS "--budget-frac 0.1")
endforeach()
# The same two with bf16 moments: each tier once, and a budget.
set(zs_hostmode_rem_m16 --bf16 1 --master 2 --moments-bf16 1 --reftol 3e-2)
set(zs_hostmode_lean_m16 --bf16 1 --master 3 --moments-bf16 1 --reftol 3e-2)
foreach(m rem_m16 lean_m16)
  set(margs ${zs_hostmode_${m}})
  zs_engine_equiv(engine_hostmodes_${m}_opt_np2_stage2 2 2 det ${margs} RUN_ARGS "--offload 1")
  zs_engine_equiv(engine_hostmodes_${m}_all_splits4_stage3 "2x2;4x1" 3 det REF_STAGE 0 ${margs} RUN_ARGS "--offload 3")
  zs_engine_equiv(engine_hostmodes_${m}_params_np2_stage3 2 3 det ${margs} RUN_ARGS "--offload 2")
  zs_engine_equiv(engine_hostmodes_${m}_budget_np4_stage3 4 3 det ${margs} RUN_ARGS "--budget-frac 0.2")
endforeach()

# GPU: the same equivalence on the CUDA device. The 1-rank reference runs on the CPU device, so
# this also proves the CUDA kernels give the CPU's bits. Without a GPU the CUDA run prints one SKIP
# line and passes. Several ranks share the one GPU through the host-staged MPI backend.
if(ZS_HAVE_CUDA)
  target_link_libraries(test_engine_train PRIVATE CUDA::cudart)
  foreach(stage 0 1 2 3)
    zs_engine_equiv(engine_cuda_det_np2_stage${stage} 2 ${stage} det RUN_ARGS "--device cuda")
  endforeach()
  zs_engine_equiv(engine_cuda_offload_np2_stage3 2 3 det RUN_ARGS "--device cuda --offload 3")
  # fp32 accumulation of bf16 gradients on CUDA (the fold, the norm and AdamW on fp32 gradients):
  # the CPU 1-rank run's bits.
  zs_engine_equiv(engine_cuda_accum_fp32_np2_stage2 "2x2" 2 det REF_STAGE 0 RUN_ARGS "--device cuda"
                  --bf16 1 --accum-fp32 1 --reftol 3e-2)
  zs_mpi_test(engine_cuda_np2_stage3_bf16 test_engine_train NP 2 ARGS --device cuda --stage 3 --bf16 1 --reftol 3e-2 LABELS engine gpu)
  zs_mpi_test(engine_cuda_np1_stage0_bf16 test_engine_train NP 1 ARGS --device cuda --stage 0 --bf16 1 --reftol 3e-2 LABELS engine gpu)
  set_tests_properties(engine_cuda_det_np2_stage0 engine_cuda_det_np2_stage1 engine_cuda_det_np2_stage2
                       engine_cuda_det_np2_stage3 engine_cuda_offload_np2_stage3
                       engine_cuda_accum_fp32_np2_stage2 PROPERTIES LABELS "mpi;engine;gpu")
endif()
if(ZS_HAVE_CUDA)
  # NCCL refuses two ranks on one GPU: the multi-rank GPU tests use the host-staged MPI backend.
  set_property(TEST engine_cuda_det_np2_stage0 engine_cuda_det_np2_stage1 engine_cuda_det_np2_stage2
               engine_cuda_det_np2_stage3 engine_cuda_offload_np2_stage3 engine_cuda_np2_stage3_bf16
               engine_cuda_accum_fp32_np2_stage2 APPEND PROPERTY ENVIRONMENT ZS_COMM=mpi)
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
# Rank divergence (tests/engine/test_engine_diverge.c): random legal programs where one rank
# deviates (sampling alone, a missing/extra/other-unit grads_ready, another order, another
# micro-step count, save against step, ...): every rank must fail with a message naming it, within
# comm_timeout_s, and every rank must finalise MPI (mpirun exits 0, no MPI error lines); legal
# deviations (local calls) must pass. --sample: rank 0 sampling alone at stages 0-3.
zs_exe(test_engine_diverge SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_diverge.c)
foreach(n 2 3)
  zs_mpi_test(engine_diverge_np${n} test_engine_diverge NP ${n} TIMEOUT 300 LABELS engine)
endforeach()
zs_mpi_test(engine_diverge_sample_np2 test_engine_diverge NP 2 ARGS --sample TIMEOUT 180 LABELS engine)
# One more whole micro-step on one rank at stages 0-1 (the reductions line up): caught by the
# header, and with the header off (the program's comm_check = 0) by the step's agreement alone.
zs_mpi_test(engine_diverge_micro_np2 test_engine_diverge NP 2 ARGS --micro TIMEOUT 180 LABELS engine)
zs_mpi_test(engine_diverge_micro_nocheck_np2 test_engine_diverge NP 2 ARGS --micro --check-off TIMEOUT 180 LABELS engine)
# Hand-made cases (tests/engine/test_engine_diverge_cases.c): units of equal size where one rank
# sets another unit (the header names the unit a gather moves and whether it prefetches); gathers
# in another order with the header off (the step's agreement compares a running hash of the
# calls; the header off through ZS_COMM_CHECK=0); a divergence inside one shard group of a hybrid (every destroy prompt, every rank
# finalises); a peer's zs_engine_abort (the healthy rank's gather and destroy fail or return at
# once; destroy keeps the caller's last error); creates diverging after the world group opened
# (each keeps its own message).
zs_exe(test_engine_diverge_cases SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_diverge_cases.c)
zs_mpi_test(engine_diverge_units_np2 test_engine_diverge_cases NP 2 ARGS --units TIMEOUT 120 LABELS engine)
zs_mpi_test(engine_diverge_order_np2 test_engine_diverge_cases NP 2 ARGS --order TIMEOUT 120 LABELS engine)
zs_mpi_test(engine_diverge_order_nocheck_np2 test_engine_diverge_cases NP 2 ARGS --order TIMEOUT 120 LABELS engine)
set_property(TEST engine_diverge_order_nocheck_np2 APPEND PROPERTY ENVIRONMENT ZS_COMM_CHECK=0)
zs_mpi_test(engine_diverge_hybrid_np4 test_engine_diverge_cases NP 4 ARGS --hybrid TIMEOUT 120 LABELS engine)
zs_mpi_test(engine_diverge_abort_np2 test_engine_diverge_cases NP 2 ARGS --abort TIMEOUT 120 LABELS engine)
zs_mpi_test(engine_diverge_create_np2 test_engine_diverge_cases NP 2 ARGS --create TIMEOUT 120 LABELS engine)
zs_mpi_test(engine_diverge_config_np2 test_engine_diverge_cases NP 2 ARGS --config TIMEOUT 120 LABELS engine)
set_tests_properties(engine_diverge_np2 engine_diverge_np3 engine_diverge_sample_np2
                     engine_diverge_micro_np2 engine_diverge_micro_nocheck_np2
                     engine_diverge_units_np2 engine_diverge_order_np2
                     engine_diverge_order_nocheck_np2 engine_diverge_hybrid_np4
                     engine_diverge_abort_np2 engine_diverge_create_np2 PROPERTIES
                     FAIL_REGULAR_EXPRESSION "MPI_ERR|noticed that|libnbc|MPI_ABORT|exited on signal|without calling")
# One regression test per stage-3 defect (eval/sampling gathers, stale set_param, max_live,
# hybrid deterministic scratch, commit fit check, offload worker split).
# Each engine owns its optimizer's CPU workers: two engines with different ZS_ADAMW_THREADS in one
# process, one destroyed while the other trains on, against a float64 AdamW reference.
zs_exe(test_engine_optim SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_optim.c)
zs_mpi_test(engine_optim_pools test_engine_optim NP 1 LABELS "engine;offload")
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



# GPU readiness (tests/gpu_tests.md lists these): the engine on the CUDA device through paths the
# tests above leave out. Each runs under tests/gpu_expect.sh, which skips without a GPU (the
# probe tests/cuda_probe.c, shared with the checkpoint and GPT-2 GPU tests) and otherwise
# requires the engine banner of the run under test (zs_engine_info: device, backend, world,
# shard group, offload), so a combination of options that falls back to another path fails.
# Several ranks share the one GPU through NCCL, each with its own NCCL_HOSTID (with_hostid.sh).
if(ZS_HAVE_CUDA)
  zs_exe(zs_cuda_probe SOURCES ${ZS_TESTS_DIR}/cuda_probe.c LIBS CUDA::cudart)
  # zs_engine_cuda(name N STAGE det|nondet EXPECT [common args] [RUN_ARGS "..."]): engine_equiv.sh
  # (1 rank x N micro-steps, then N ranks x 1 micro-step under with_hostid.sh) whose output must
  # match the extended regular expression EXPECT.
  function(zs_engine_cuda name n stage mode expect)
    cmake_parse_arguments(A "" "RUN_ARGS" "" ${ARGN})
    add_test(NAME ${name}
             COMMAND bash ${ZS_TESTS_DIR}/gpu_expect.sh $<TARGET_FILE:zs_cuda_probe> "${expect}" --
                     bash ${CMAKE_CURRENT_LIST_DIR}/engine_equiv.sh ${ZS_MPIEXEC}
                     $<TARGET_FILE:test_engine_train> ${n} ${stage} ${mode} ${A_UNPARSED_ARGUMENTS})
    set_tests_properties(${name} PROPERTIES
                         ENVIRONMENT "${ZS_TEST_ENV};EQUIV_RUN_ARGS=${A_RUN_ARGS};EQUIV_RUN_PREFIX=${ZS_TESTS_DIR}/with_hostid.sh"
                         TIMEOUT 180 LABELS "mpi;engine;gpu" PROCESSORS ${n})
  endfunction()
  set(zs_nccl "cuda:[0-9]+, comm nccl")
  # Offload on CUDA against no offload on CUDA (--device cuda is common to both runs, so the
  # reference is the CUDA engine too): optimizer only at stages 1-2, params only at stage 3 and
  # with sharded params over full gradients; deterministic, so bit for bit.
  zs_engine_cuda(engine_cuda_offload_opt_np1_stage1 1 1 det "${zs_nccl}, world 1, .*; offload optimizer:"
                 --device cuda RUN_ARGS "--offload 1")
  zs_engine_cuda(engine_cuda_offload_opt_np2_stage2 2 2 det "${zs_nccl}, world 2, .*; offload optimizer:"
                 --device cuda RUN_ARGS "--offload 1")
  zs_engine_cuda(engine_cuda_offload_params_np1_stage3 1 3 det "${zs_nccl}, world 1, .*; offload params:"
                 --device cuda RUN_ARGS "--offload 2")
  zs_engine_cuda(engine_cuda_offload_params_np2_stage3 2 3 det "${zs_nccl}, world 2, .*; offload params:"
                 --device cuda RUN_ARGS "--offload 2")
  # offload_budget_bytes = ZS_BUDGET_FREE on CUDA: the budget is cudaMemGetInfo's free bytes
  # less the reserve, measured and agreed at commit (zs_engine_info says so); bit for bit.
  zs_engine_cuda(engine_cuda_budget_free_np2_stage3 2 3 det
                 "${zs_nccl}, world 2, .*; placement: budget [0-9]+ bytes \\(free at commit, the least over 2 ranks\\)"
                 --device cuda RUN_ARGS "--budget-free 1")
  zs_engine_cuda(engine_cuda_offload_params_switch_np2 2 1 det
                 "${zs_nccl}, world 2, .*; offload params:" --device cuda
                 RUN_ARGS "--shard-params 1 --offload 2")
  # The precision modes on the host tier on CUDA: the copy pipeline with each mode's CPU update
  # (bf16 moments in the arena, an fp32 host master for device params, the arena's params as the
  # master), and with params alone offloaded the device update into scratch; bit for bit against
  # the same mode without offload on CUDA (whose device kernels give the CPU's bits).
  zs_engine_cuda(engine_cuda_hostmodes_master_params_opt_np2_stage2 2 2 det
                 "${zs_nccl}, world 2, .*; offload optimizer:" --device cuda --master 1
                 RUN_ARGS "--offload 1")
  zs_engine_cuda(engine_cuda_hostmodes_both_all_np2_stage3 2 3 det
                 "${zs_nccl}, world 2, .*; offload optimizer params:" --device cuda --master 1
                 --moments-bf16 1 --reftol 5e-4 RUN_ARGS "--offload 3")
  zs_engine_cuda(engine_cuda_hostmodes_moments_bf16_params_np1_stage3 1 3 det
                 "${zs_nccl}, world 1, .*; offload params:" --device cuda --moments-bf16 1
                 --reftol 5e-4 RUN_ARGS "--offload 2")
  zs_engine_cuda(engine_cuda_hostmodes_both_budget_np2_stage1 2 1 det
                 "${zs_nccl}, world 2, .*; placement: budget" --device cuda --master 1
                 --moments-bf16 1 --reftol 5e-4 RUN_ARGS "--budget-frac 0.2")
  # The remainder and lean modes on the host tier on CUDA: the copy pipeline brings each chunk's
  # bf16 params down with its gradient, the mode's host update runs on them (and the arena's
  # remainders, m, v) and they go back up (ZS_OFFLOAD_CHUNK=100: many chunks, both staging slots
  # reused); with params alone offloaded the mode's kernel runs on a device scratch copy of them.
  # Bit for bit against the same mode without offload on CUDA; the lean ones with the 1-rank CPU
  # run as the reference (CUDA and CPU draw the same rounding bits).
  zs_engine_cuda(engine_cuda_hostmodes_rem_opt_np2_stage2 2 2 det
                 "${zs_nccl}, world 2, .*remainder master.*; offload optimizer:" --device cuda
                 --bf16 1 --master 2 --reftol 3e-2 RUN_ARGS "--offload 1")
  zs_engine_cuda(engine_cuda_hostmodes_rem_m16_all_np2_stage3 2 3 det
                 "${zs_nccl}, world 2, .*remainder master.*; offload optimizer params:" --device cuda
                 --bf16 1 --master 2 --moments-bf16 1 --reftol 3e-2 RUN_ARGS "--offload 3")
  zs_engine_cuda(engine_cuda_hostmodes_rem_params_np1_stage3 1 3 det
                 "${zs_nccl}, world 1, .*remainder master.*; offload params:" --device cuda
                 --bf16 1 --master 2 --reftol 3e-2 RUN_ARGS "--offload 2")
  zs_engine_cuda(engine_cuda_hostmodes_lean_opt_np2_stage1 2 1 det
                 "${zs_nccl}, world 2, .*master lean.*; offload optimizer:" --bf16 1 --master 3
                 --reftol 3e-2 RUN_ARGS "--device cuda --offload 1")
  zs_engine_cuda(engine_cuda_hostmodes_lean_budget_np2_stage3 2 3 det
                 "${zs_nccl}, world 2, .*master lean.*; placement: budget" --bf16 1 --master 3
                 --reftol 3e-2 RUN_ARGS "--device cuda --budget-frac 0.2")
  zs_engine_cuda(engine_cuda_hostmodes_lean_m16_params_np2_stage3 2 3 det
                 "${zs_nccl}, world 2, .*master lean.*; offload params:" --device cuda --bf16 1
                 --master 3 --moments-bf16 1 --reftol 3e-2 RUN_ARGS "--offload 2")
  set_property(TEST engine_cuda_hostmodes_rem_opt_np2_stage2 engine_cuda_hostmodes_lean_opt_np2_stage1
               APPEND PROPERTY ENVIRONMENT ZS_OFFLOAD_CHUNK=100)
  # Hybrid sharding on CUDA: 4 ranks as 2 shard groups x 2 replicas, the groups made by
  # ncclCommSplit; against the 1-rank CPU reference (bit for bit in deterministic mode, 1e-6
  # with NCCL's own reduction order).
  zs_engine_cuda(engine_cuda_hybrid_np4_stage3 4 3 det "${zs_nccl}, world 4, shard group 2,"
                 --group 2 RUN_ARGS "--device cuda")
  zs_engine_cuda(engine_cuda_hybrid_np4_stage1 4 1 det "${zs_nccl}, world 4, shard group 2,"
                 --group 2 RUN_ARGS "--device cuda")
  zs_engine_cuda(engine_cuda_hybrid_nondet_np4_stage2 4 2 nondet "${zs_nccl}, world 4, shard group 2,"
                 --group 2 RUN_ARGS "--device cuda")
  # NCCL with 4 ranks on the one GPU, the whole world one shard group.
  zs_engine_cuda(engine_cuda_nccl_np4_stage3 4 3 det "${zs_nccl}, world 4, shard group 4,"
                 RUN_ARGS "--device cuda")
  zs_engine_cuda(engine_cuda_nccl_nondet_np4_stage2 4 2 nondet "${zs_nccl}, world 4, shard group 4,"
                 RUN_ARGS "--device cuda")
  # The non-finite-gradient skip on CUDA: rank N-1 poisons one gradient of step 2 with NaN; every
  # step must report skipped_nonfinite exactly when poisoned (test_engine_train checks each
  # step), and the final params must equal the CPU reference that skipped the same step. Also
  # with offloaded optimizer and params (the CPU optimizer's skip), and bf16 params on one rank
  # (against the float64 reference, as the other bf16 tests).
  zs_engine_cuda(engine_cuda_nonfinite_np2_stage2 2 2 det "${zs_nccl}, world 2,"
                 --skip-nonfinite-at 2 RUN_ARGS "--device cuda")
  zs_engine_cuda(engine_cuda_nonfinite_np2_stage3_offload 2 3 det
                 "${zs_nccl}, world 2, .*; offload optimizer params:" --skip-nonfinite-at 2
                 RUN_ARGS "--device cuda --offload 3")
  # The remainder master on CUDA (zs_cuda_adamw_rem) against the CPU's fp32 master with the
  # ties-away hook (1 rank, the same stage): bit for bit; bf16 moments too.
  zs_engine_cuda(engine_cuda_master_rem_np2_stage3 2 3 det "${zs_nccl}, world 2, .*remainder master"
                 --bf16 1 --ties-away 1 --reftol 3e-2 RUN_ARGS "--device cuda --master 2 --ties-away 0")
  zs_engine_cuda(engine_cuda_master_rem_m16_np1_stage1 1 1 det
                 "${zs_nccl}, world 1, .*remainder master" --bf16 1 --ties-away 1 --moments-bf16 1
                 --reftol 3e-2 RUN_ARGS "--device cuda --master 2 --ties-away 0")
  add_test(NAME engine_cuda_nonfinite_np1_bf16
           COMMAND bash ${ZS_TESTS_DIR}/gpu_expect.sh $<TARGET_FILE:zs_cuda_probe> "${zs_nccl}, world 1, .*bf16 params" --
                   ${ZS_MPIEXEC} --oversubscribe -np 1 $<TARGET_FILE:test_engine_train> --device cuda
                   --stage 0 --bf16 1 --reftol 3e-2 --skip-nonfinite-at 1)
  set_tests_properties(engine_cuda_nonfinite_np1_bf16 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}"
                       TIMEOUT 120 LABELS "mpi;engine;gpu" PROCESSORS 1)
endif()
# Frozen units: against a run where they are trainable with zero gradient and no weight decay,
# a float64 norm over the trainable units, the ledger and the planner, the export; stages 0-3 on
# 1-4 ranks. Checkpoints saved frozen load frozen or trainable on another world size and stage.
zs_exe(test_engine_frozen SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_frozen.c)
foreach(n 1 2 3 4)
  zs_mpi_test(engine_frozen_np${n} test_engine_frozen NP ${n} LABELS engine)
endforeach()
zs_mpi_test(engine_frozen_bf16_np2 test_engine_frozen NP 2 ARGS --bf16 LABELS engine)
# With the precision modes: no master alias, m or v for a frozen unit, its params never updated.
zs_mpi_test(engine_frozen_master_params_np2 test_engine_frozen NP 2 ARGS --master LABELS engine)
zs_mpi_test(engine_frozen_m16_np3 test_engine_frozen NP 3 ARGS --m16 LABELS engine)
zs_mpi_test(engine_frozen_bf16_m16_np2 test_engine_frozen NP 2 ARGS --bf16 --m16 LABELS engine)
zs_mpi_test(engine_frozen_lean_np2 test_engine_frozen NP 2 ARGS --bf16 --lean LABELS engine)
zs_mpi_test(engine_frozen_lean_m16_np3 test_engine_frozen NP 3 ARGS --bf16 --lean --m16 LABELS engine)
function(zs_frozen_ckpt name first second)
  add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/frozen_ckpt.sh ${ZS_MPIEXEC}
                                $<TARGET_FILE:test_engine_frozen> ${first} ${second} ${ARGN})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=200"
                                          TIMEOUT 120 LABELS "mpi;ckpt;engine" PROCESSORS 4)
endfunction()
zs_frozen_ckpt(engine_frozen_ckpt_2s3_to_3s1 "2 3" "3 1")
zs_frozen_ckpt(engine_frozen_ckpt_4s2_to_1s0_trainable "4 2" "1 0 --trainable")
zs_frozen_ckpt(engine_frozen_ckpt_1s0_to_4s3_trainable "1 0" "4 3 --trainable")
zs_frozen_ckpt(engine_frozen_ckpt_bf16_3s3_to_2s3 "3 3 --bf16" "2 3 --bf16")
# Saved trainable, loaded frozen: the params are the saved master (fp32: exactly).
zs_frozen_ckpt(engine_frozen_ckpt_trainable_2s1_to_3s3 "2 1 --trainable" "3 3")
# Precision modes on either side: fp32 moments on disk whether saved frozen (zeros) or in bf16.
zs_frozen_ckpt(engine_frozen_ckpt_m16_master_2s2_to_3s3_trainable "2 2 --m16 --master"
               "3 3 --trainable --m16")
zs_frozen_ckpt(engine_frozen_ckpt_m16_trainable_3s1_to_2s0 "3 1 --trainable --m16" "2 0 --master")
# Lean mode on either side (bf16 params): the saved values are the params widened either way.
zs_frozen_ckpt(engine_frozen_ckpt_lean_2s3_to_3s1_trainable "2 3 --bf16 --lean" "3 1 --trainable --bf16")
zs_frozen_ckpt(engine_frozen_ckpt_trainable_3s2_to_2s0_lean "3 2 --trainable --bf16" "2 0 --bf16 --lean")
# The remainder master: bit-identical to the fp32 master whose compute copy rounds ties away (the
# test hook) in losses, master and checkpointed m and v, and checkpoints across the two modes
# exact, at world sizes 1, 2, 4 and stages 1, 2, 3; bf16 moments too.
# Split across ranks, micro-steps and stages against the 1-rank fp32-master reference with that
# hook (test_engine_train's final master, bit for bit).
foreach(stage 1 2 3)
  zs_engine_equiv(engine_splits4_stage${stage}_master_rem "1x4;2x2;4x1" ${stage} det REF_STAGE 0
                  --bf16 1 --ties-away 1 --reftol 3e-2 RUN_ARGS "--master 2 --ties-away 0")
endforeach()
zs_engine_equiv(engine_splits4_stage3_master_rem_m16 "2x2;4x1" 3 det REF_STAGE 0 --bf16 1
                --ties-away 1 --moments-bf16 1 --reftol 3e-2 RUN_ARGS "--master 2 --ties-away 0")
zs_exe(test_engine_rem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_rem.c)
foreach(n 1 2 4)
  foreach(stage 1 2 3)
    zs_mpi_test(engine_rem_np${n}_stage${stage} test_engine_rem NP ${n}
                ARGS --stage ${stage} --dir engine_rem_np${n}_stage${stage}.d LABELS engine)
  endforeach()
  zs_mpi_test(engine_rem_m16_np${n}_stage3 test_engine_rem NP ${n}
              ARGS --stage 3 --m16 --dir engine_rem_m16_np${n}_stage3.d LABELS engine)
endforeach()
zs_mpi_test(engine_rem_np4_stage3_group2 test_engine_rem NP 4
            ARGS --stage 3 --group 2 --dir engine_rem_np4_stage3_group2.d LABELS engine)
zs_mpi_test(engine_rem_m16_np2_stage1 test_engine_rem NP 2
            ARGS --stage 1 --m16 --dir engine_rem_m16_np2_stage1.d LABELS engine)
# The NVMe tier at commit (nvme_path): an empty placement commits and shows in zs_engine_info; one
# that puts a unit on the tier commits under a real directory (ledger = planner) and is refused
# under a missing one, and zs_plan_model counts the placement.
zs_exe(test_engine_nvme_plan SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_nvme_plan.c)
zs_mpi_test(engine_nvme_plan test_engine_nvme_plan NP 1 ARGS ${CMAKE_CURRENT_BINARY_DIR} LABELS engine)
# The NVMe tier's disk at commit, two ranks on one small loop-mounted ext4 (tests/offload/
# nvme_full_fs.sh; skipped where no loop mount can be made): a dead run's tier reclaimed, a live
# one's kept, free space checked for the ranks of the disk together.
zs_exe(test_engine_nvme_disk SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_nvme_disk.c)
add_test(NAME engine_nvme_disk_np2
         COMMAND bash ${PROJECT_SOURCE_DIR}/tests/offload/nvme_full_fs.sh ${CMAKE_CURRENT_BINARY_DIR}
                 ${ZS_MPIEXEC} --oversubscribe -np 2 $<TARGET_FILE:test_engine_nvme_disk>)
set_tests_properties(engine_nvme_disk_np2 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                     LABELS "mpi;engine" PROCESSORS 2 SKIP_RETURN_CODE 77 ${ZS_TIMEOUT_SIGNAL})
# mpirun killed alone: its ranks notice the launcher's death at their next step or save, stop
# with a message saying so and commit nothing more (launcher_death.sh).
zs_exe(test_engine_launcher SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_launcher.c)
add_test(NAME engine_launcher_death_np2 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/launcher_death.sh
                                                ${ZS_MPIEXEC} $<TARGET_FILE:test_engine_launcher>)
set_tests_properties(engine_launcher_death_np2 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 150
                     LABELS "mpi;engine" PROCESSORS 2)
# One memory verdict under a host cap: zs_plan_model's fits equals commit's verdict, and the
# ledger books the planner's host bytes, for random models, tiers, modes and caps (NVMe too).
zs_exe(test_engine_host_cap SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_host_cap.c)
zs_mpi_test(engine_host_cap test_engine_host_cap NP 1 ARGS ${CMAKE_CURRENT_BINARY_DIR} LABELS engine)
# The NVMe tier's range reads and writes and its life in the engine (src/tier/nvme_range.c,
# nvme_tier.c): random ranges of every array against a plain float array, the files read back with
# buffered I/O, bad ranges, set/get_param through the tier, planner = ledger, a deleted file, the
# directory removed at destroy; 1 and 2 ranks. Files under the build folder (a real disk).
zs_exe(test_engine_nvme_range SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_nvme_range.c)
foreach(n 1 2)
  zs_mpi_test(engine_nvme_range_np${n} test_engine_nvme_range NP ${n}
              ARGS ${CMAKE_CURRENT_BINARY_DIR} LABELS "engine;offload")
  set_tests_properties(engine_nvme_range_np${n} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# The NVMe tier's step (src/tier/nvme_tier.c) against host offload: in each run the same
# training with the optimizer state in the host arena and then with the largest units on the tier
# (--mode some: the fewest the arena's headroom allows; all: every unit over it), bit for bit in
# deterministic mode; and through engine_equiv.sh against one rank's plain run at stage 0 (which has
# no host tier) across world sizes 1, 2, 4, stages 1-3 and splits of the global batch; host-resident
# params too (--offload 3), the host tier by a budget (--offload 0), non-deterministic mode.
zs_exe(test_engine_nvme_train SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_nvme_train.c)
set(zs_nvme_dir EXE test_engine_nvme_train REF_STAGE 0 --dir ${CMAKE_CURRENT_BINARY_DIR})
set(zs_nvme_tests engine_nvme_np1_stage3 engine_nvme_splits4_stage3 engine_nvme_params_host_np2_stage3
                  engine_nvme_nondet_np2_stage2 engine_nvme_budget_np2_stage2)
foreach(stage 1 2 3)
  zs_engine_equiv(engine_nvme_some_np2_stage${stage} 2 ${stage} det ${zs_nvme_dir} --mode some --groups 1)
  zs_engine_equiv(engine_nvme_all_np4_stage${stage} 4 ${stage} det ${zs_nvme_dir} --mode all)
  list(APPEND zs_nvme_tests engine_nvme_some_np2_stage${stage} engine_nvme_all_np4_stage${stage})
endforeach()
zs_mpi_test(engine_nvme_np1_stage3 test_engine_nvme_train NP 1 LABELS engine
            ARGS --dir ${CMAKE_CURRENT_BINARY_DIR} --stage 3 --micro 2 --mode some)
# The whole-tensor optimizers on the tier (their gather a pass of its own, their store in the
# update's pass): a 37 x 135137 matrix and its bias on Adafactor here (unit big keeps one state
# array, packed to the matrix's factors and the bias in memory, so it is larger than the default's
# 4000001 elements to stay the tier's: the test checks that unit big is on the tier), on Muon in
# lean mode below.
zs_engine_equiv(engine_nvme_splits4_stage3 "1x4;2x2;4x1" 3 det ${zs_nvme_dir} --mode all
                --whole adafactor --big 5000069)
zs_engine_equiv(engine_nvme_params_host_np2_stage3 2 3 det ${zs_nvme_dir} --mode all --offload 3
                --big 12000001)
zs_engine_equiv(engine_nvme_budget_np2_stage2 2 2 det ${zs_nvme_dir} --mode all --offload 0)
zs_engine_equiv(engine_nvme_nondet_np2_stage2 2 2 nondet ${zs_nvme_dir} --mode some)
# The precision modes on the tier (their own files: bf16 moments, the remainders, no master file in
# lean mode or with ZS_MASTER_PARAMS and host params), each bit for bit against host offload in
# that mode and against the mode's 1-rank in-memory run at stage 0.
set(zs_nvme_bf16 --bf16 1 --mode all)
zs_engine_equiv(engine_nvme_muon_lean_np2_stage2 2 2 det ${zs_nvme_dir} ${zs_nvme_bf16}
                --master lean --whole muon)
# These two also keep unit big all on Adafactor: one state array on the tier (bf16; the params mode).
zs_engine_equiv(engine_nvme_m16_np2_stage3 2 3 det ${zs_nvme_dir} --mode all --moments-bf16 1
                --whole adafactor --big 5000069)
zs_engine_equiv(engine_nvme_params_np2_stage2 2 2 det ${zs_nvme_dir} --mode all --master params
                --whole adafactor --big 5000069)
zs_engine_equiv(engine_nvme_params_host_master_np2_stage3 2 3 det ${zs_nvme_dir} --mode all
                --master params --offload 3 --big 12000001)
zs_engine_equiv(engine_nvme_rem_np2_stage3 2 3 det ${zs_nvme_dir} ${zs_nvme_bf16} --master remainder)
zs_engine_equiv(engine_nvme_rem_m16_splits4_stage3 "1x4;2x2;4x1" 3 det ${zs_nvme_dir}
                ${zs_nvme_bf16} --master remainder --moments-bf16 1 --big 12000001)
zs_engine_equiv(engine_nvme_lean_np4_stage2 4 2 det ${zs_nvme_dir} ${zs_nvme_bf16} --master lean
                --big 12000001)
zs_engine_equiv(engine_nvme_lean_m16_params_host_np2_stage3 2 3 det ${zs_nvme_dir} ${zs_nvme_bf16}
                --master lean --moments-bf16 1 --offload 3 --big 12000001)
zs_engine_equiv(engine_nvme_lean_budget_np2_stage1 2 1 det ${zs_nvme_dir} ${zs_nvme_bf16}
                --master lean --offload 0)
# fp32 accumulation of bf16 gradients: the tier's update reads fp32 gradients as host offload does.
zs_engine_equiv(engine_nvme_accum_fp32_np2_stage2 "2x2" 2 det ${zs_nvme_dir} ${zs_nvme_bf16}
                --accum-fp32 1)
list(APPEND zs_nvme_tests engine_nvme_muon_lean_np2_stage2 engine_nvme_accum_fp32_np2_stage2 engine_nvme_m16_np2_stage3 engine_nvme_params_np2_stage2
     engine_nvme_params_host_master_np2_stage3 engine_nvme_rem_np2_stage3
     engine_nvme_rem_m16_splits4_stage3 engine_nvme_lean_np4_stage2
     engine_nvme_lean_m16_params_host_np2_stage3 engine_nvme_lean_budget_np2_stage1)
set_property(TEST ${zs_nvme_tests} APPEND PROPERTY LABELS offload)
# The tier's files go under --dir, or where the build folder cannot hold them (tmpfs, an overlay
# without O_DIRECT) under $TMPDIR, /tmp or /var/tmp; with none of them the program prints "SKIP: no
# O_DIRECT filesystem" and ends with 77 (nvt_find_root, tests/offload/nvme_test_util.h).
set_tests_properties(${zs_nvme_tests} PROPERTIES SKIP_RETURN_CODE 77)
# GPU: the tier on the CUDA device (the step's chunks through the copy pipeline: gradients down,
# params up; the master gathered through a bounded host piece), against host offload on CUDA bit for
# bit and against the CPU device's 1-rank stage-0 run (engine_equiv.sh); device-resident and
# host-resident params, 1 and 2 ranks on the one GPU (the host-staged MPI backend, as the tests
# above). Without a GPU each run prints one SKIP line and passes.
if(ZS_HAVE_CUDA)
  target_link_libraries(test_engine_nvme_train PRIVATE CUDA::cudart)
  zs_engine_equiv(engine_cuda_nvme_some_np1_stage1 1 1 det ${zs_nvme_dir} --mode some
                  RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_nvme_all_np2_stage3 2 3 det ${zs_nvme_dir} --mode all
                  RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_nvme_params_host_np2_stage3 2 3 det ${zs_nvme_dir} --mode all
                  --offload 3 --big 12000001 RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_nvme_rem_m16_np2_stage3 2 3 det ${zs_nvme_dir} ${zs_nvme_bf16}
                  --master remainder --moments-bf16 1 RUN_ARGS "--device cuda")
  zs_engine_equiv(engine_cuda_nvme_lean_np2_stage2 2 2 det ${zs_nvme_dir} ${zs_nvme_bf16}
                  --master lean RUN_ARGS "--device cuda")
  set(zs_cuda_nvme engine_cuda_nvme_some_np1_stage1 engine_cuda_nvme_all_np2_stage3
                   engine_cuda_nvme_params_host_np2_stage3 engine_cuda_nvme_rem_m16_np2_stage3
                   engine_cuda_nvme_lean_np2_stage2)
  set_property(TEST ${zs_cuda_nvme} APPEND PROPERTY LABELS "offload;gpu")
  set_property(TEST ${zs_cuda_nvme} APPEND PROPERTY ENVIRONMENT ZS_COMM=mpi)
  # NCCL (two ranks on the GPU, each with its own NCCL_HOSTID): the tier's read agreement before
  # the master's all-gather moves its status words through device memory.
  zs_engine_equiv(engine_cuda_nccl_nvme_rem_np2_stage3 2 3 det ${zs_nvme_dir} ${zs_nvme_bf16}
                  --master remainder RUN_ARGS "--device cuda")
  set_property(TEST engine_cuda_nccl_nvme_rem_np2_stage3 APPEND PROPERTY ENVIRONMENT
               "EQUIV_RUN_PREFIX=env ZS_COMM=nccl ${ZS_TESTS_DIR}/with_hostid.sh")
  set_property(TEST engine_cuda_nccl_nvme_rem_np2_stage3 APPEND PROPERTY LABELS "offload;gpu")
  set_tests_properties(${zs_cuda_nvme} engine_cuda_nccl_nvme_rem_np2_stage3
                       PROPERTIES SKIP_RETURN_CODE 77) # no O_DIRECT folder at all (see above)
endif()
# The NVMe tier's failures in the engine (a deleted file, an injected EIO, a file size limit in the
# step; RLIMIT_FSIZE at commit): every rank fails, the failing one naming the file and the offset,
# the others that rank; nothing left on disk. Needs the test build's I/O hook (nvme_hooks.h).
zs_exe(test_engine_nvme_fail SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_nvme_fail.c)
target_compile_definitions(test_engine_nvme_fail PRIVATE ZS_TEST_HOOKS=1)
foreach(n 1 2)
  zs_mpi_test(engine_nvme_fail_np${n} test_engine_nvme_fail NP ${n}
              ARGS ${CMAKE_CURRENT_BINARY_DIR}/nvme_fail_np${n} LABELS "engine;offload")
  set_tests_properties(engine_nvme_fail_np${n} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# SGD (zs_config.optimizer = ZS_OPT_SGD, src/optim/sgd): against torch.optim.SGD's update in
# float64 (test_engine_train's reference), and the same bits across splits, stages, offload,
# budgets, the precision modes and the NVMe tier as AdamW gets (the cases above, a few of each).
zs_mpi_test(engine_train_np1_sgd test_engine_train NP 1 ARGS --stage 3 --micro 2 --sgd 0.9 --dampening 0.1 --nograd 1 LABELS engine)
zs_mpi_test(engine_train_np1_sgd_plain test_engine_train NP 1 ARGS --stage 0 --sgd 0 LABELS engine)
zs_engine_equiv(engine_sgd_splits4_stage1 "1x4;2x2;4x1" 1 det REF_STAGE 0 --sgd 0.9 --dampening 0.1 --groups 1)
zs_engine_equiv(engine_sgd_nesterov_splits4_stage3 "2x2;4x1" 3 det REF_STAGE 0 --sgd 0.9 --nesterov 1)
zs_engine_equiv(engine_sgd_offload_splits4_stage3 "2x2;4x1" 3 det REF_STAGE 0 --sgd 0.9 --groups 1 RUN_ARGS "--offload 3")
zs_engine_equiv(engine_sgd_budget_np2_stage2 2 2 det REF_STAGE 0 --sgd 0.9 RUN_ARGS "--budget-frac 0.2")
zs_engine_equiv(engine_sgd_master_params_np2_stage2 2 2 det REF_STAGE 0 --sgd 0.9 --master 1 --moments-bf16 1 --reftol 5e-4 --state 1)
zs_engine_equiv(engine_sgd_rem_offload_np2_stage3 2 3 det REF_STAGE 0 --sgd 0.9 --bf16 1 --master 2 --reftol 3e-2 --groups 1 --peek 1 RUN_ARGS "--offload 1")
zs_engine_equiv(engine_sgd_lean_np2_stage1 2 1 det REF_STAGE 0 --sgd 0.9 --bf16 1 --master 3 --reftol 3e-2)
zs_engine_equiv(engine_sgd_nvme_np2_stage3 2 3 det ${zs_nvme_dir} --mode all --sgd 0.9 --groups 1)
zs_engine_equiv(engine_sgd_plain_offload_np2_stage3 2 3 det REF_STAGE 0 --sgd 0 --groups 1 RUN_ARGS "--offload 3")
zs_engine_equiv(engine_sgd_plain_nvme_np2_stage2 2 2 det ${zs_nvme_dir} --mode all --sgd 0
                --big 12000001)
zs_engine_equiv(engine_lion_nvme_m16_np2_stage3 2 3 det ${zs_nvme_dir} --mode some --lion 1 --moments-bf16 1 --groups 1)
zs_engine_equiv(engine_sgd_nvme_lean_np2_stage2 2 2 det ${zs_nvme_dir} ${zs_nvme_bf16} --master lean --sgd 0.5
                --big 12000001)
set_tests_properties(engine_sgd_nvme_np2_stage3 engine_sgd_nvme_lean_np2_stage2
                     engine_sgd_plain_nvme_np2_stage2 engine_lion_nvme_m16_np2_stage3 PROPERTIES SKIP_RETURN_CODE 77 LABELS "mpi;engine;offload")
# The same SGD against PyTorch's own torch.optim.SGD (check_sgd_torch.py: the synthetic model
# rebuilt in float64 torch; momentum with dampening, nesterov, none), with whichever Python
# scripts/ensure-torch.sh finds or installs (77, skipped, where there is none).
add_test(NAME engine_sgd_torch
         COMMAND bash -c "PY=$(bash ${PROJECT_SOURCE_DIR}/scripts/ensure-torch.sh) || exit 77; exec \"$PY\" \"$0\" \"$1\" \"$2\""
                 ${CMAKE_CURRENT_LIST_DIR}/check_sgd_torch.py $<TARGET_FILE:test_engine_train> ${ZS_MPIEXEC})
set_tests_properties(engine_sgd_torch PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" SKIP_RETURN_CODE 77
                     TIMEOUT 600 LABELS "mpi;engine;python")
# Lion (zs_config.optimizer = ZS_OPT_LION, src/optim/lion): against the paper's update in float64,
# and the same bits across splits, stages, offload, budgets, the precision modes and the NVMe tier.
zs_mpi_test(engine_train_np1_lion test_engine_train NP 1 ARGS --stage 3 --micro 2 --lion 1 --lr 0.01 LABELS engine)
zs_engine_equiv(engine_lion_splits4_stage2 "1x4;2x2;4x1" 2 det REF_STAGE 0 --lion 1 --lr 0.01)
zs_engine_equiv(engine_lion_offload_splits4_stage3 "2x2;4x1" 3 det REF_STAGE 0 --lion 1 --lr 0.01 --groups 1 RUN_ARGS "--offload 3")
zs_engine_equiv(engine_lion_budget_np2_stage1 2 1 det REF_STAGE 0 --lion 1 --lr 0.01 RUN_ARGS "--budget-frac 0.2")
zs_engine_equiv(engine_lion_rem_m16_np2_stage3 2 3 det REF_STAGE 0 --lion 1 --lr 0.01 --bf16 1 --master 2 --moments-bf16 1 --reftol 3e-2 RUN_ARGS "--offload 1")
zs_engine_equiv(engine_lion_lean_np2_stage2 2 2 det REF_STAGE 0 --lion 1 --lr 0.01 --bf16 1 --master 3 --reftol 3e-2 --groups 1 --peek 1 --state 1)
# Tensor parallelism (test_engine_tp.c: a tp-split MLP with sequence parallelism, its collectives
# through zs_engine_all_gather/reduce_scatter/all_reduce): tp 2 x dp 2 and tp 4 x dp 1 against
# tp 1 x dp 4 at every stage, offloaded, deterministic and not; bit-identical across dp splits at
# tp 2; the mesh's refusals (tests/engine/tp_equiv.sh).
zs_exe(test_engine_tp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_tp.c)
add_test(NAME engine_tp_np4 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/tp_equiv.sh ${ZS_MPIEXEC}
                                    $<TARGET_FILE:test_engine_tp>)
set_tests_properties(engine_tp_np4 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 300
                                              LABELS "mpi;engine" PROCESSORS 4)
