# Checkpoints: resume equivalence across world sizes, stages, offload and shard groups (bit for
# bit), a crash in the middle of a save, damaged and mismatched checkpoints, disk errors, the
# manifest/header parsers under a fuzzer, and the safetensors export.
function(zs_ckpt_resume name g first second)
  add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ckpt_resume.sh ${ZS_MPIEXEC}
                                $<TARGET_FILE:test_engine_train> ${g} ${first} ${second} ${ARGN})
  # Blocks of 200 bytes: many per file, and ranges that start and end inside them.
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=200"
                                          TIMEOUT 120 LABELS "mpi;ckpt" PROCESSORS 4)
endfunction()
# Each pair keeps the engine's determinism promise on both sides (any split of the global batch
# into ranks x micro-steps gives 1 rank's bits at every stage), so the straight run on 1 rank is
# the reference for both halves.
zs_ckpt_resume(ckpt_resume_1to4_stage0to3 4 "1 --stage 0" "4 --stage 3" --groups 1)
zs_ckpt_resume(ckpt_resume_4to3_stage3to2 12 "4 --stage 3" "3 --stage 2" --empty 1)
zs_ckpt_resume(ckpt_resume_2to4_stage3to1 4 "2 --stage 3" "4 --stage 1" --meta 1 --nograd 1)
zs_ckpt_resume(ckpt_resume_2to1_stage2to0 2 "2 --stage 2" "1 --stage 0" --empty 1)
zs_ckpt_resume(ckpt_resume_offload_2to4 4 "2 --stage 3 --offload 3" "4 --stage 2 --offload 1" --meta 1)
# An offload budget's mixed placement (two units on the host at stage 3) saved, and loaded into
# another (three units on the host at stage 1).
zs_ckpt_resume(ckpt_resume_budget_2to3 6 "2 --stage 3 --budget-frac 0.2" "3 --stage 1 --budget-frac 0.1")
zs_ckpt_resume(ckpt_resume_hybrid_2x2to3 12 "4 --stage 3 --group 2" "3 --stage 3")
# SGD's momentum buffer and Lion's m saved and loaded on another world size and stage.
zs_ckpt_resume(ckpt_resume_sgd_2to3 6 "2 --stage 3 --offload 3" "3 --stage 1" --sgd 0.9 --dampening 0.1 --groups 1)
zs_ckpt_resume(ckpt_resume_sgd_plain_2to1 2 "2 --stage 3" "1 --stage 0" --sgd 0)
zs_ckpt_resume(ckpt_resume_muon_4to2 4 "4 --stage 3" "2 --stage 1" --muon 1)
zs_ckpt_resume(ckpt_resume_adafactor_2to3 6 "2 --stage 3" "3 --stage 2" --adafactor 1)
# Format version 1 (before the manifest listed the optimizer's arrays), as 8ce144c saved it with
# `ZS_TEST_CKPT_BLOCK_BYTES=200 mpirun -np 2 test_engine_train --micro 2 --steps 5 --stage 3
# --save DIR`: it loads on 4 ranks at stage 2 and trains on bit for bit.
zs_ckpt_resume(ckpt_resume_v1_fixture 4 "2 --stage 3" "4 --stage 2")
set_property(TEST ckpt_resume_v1_fixture APPEND PROPERTY ENVIRONMENT
             "CKPT_FIXTURE=${CMAKE_CURRENT_LIST_DIR}/fixtures/v1_adamw_np2_stage3")
zs_ckpt_resume(ckpt_resume_lion_3to2 6 "3 --stage 2" "2 --stage 3 --budget-frac 0.2" --lion 1 --lr 0.01 --groups 1)
zs_ckpt_resume(ckpt_resume_to_hybrid_3to2x2 12 "3 --stage 2" "4 --stage 3 --group 2")
# bf16 params: the params come back as the master rounded to bf16; several ranks give the 1-rank
# bits too (every partial sum of the gradient is rounded to bf16, as one rank's += is).
zs_ckpt_resume(ckpt_resume_bf16_stage0to3 6 "1 --stage 0" "1 --stage 3" --bf16 1 --reftol 3e-2)
zs_ckpt_resume(ckpt_resume_bf16_2x3to3x2_stage1to3 6 "2 --stage 1" "3 --stage 3" --bf16 1 --reftol 3e-2)
# Across optimizer-state precision modes: a checkpoint stores the fp32 master canonically, and
# with fp32 params ZS_MASTER_PARAMS holds exactly that master, so both directions are lossless.
zs_ckpt_resume(ckpt_resume_master_fp32_to_params 4 "2 --stage 3" "4 --stage 1 --master 1")
zs_ckpt_resume(ckpt_resume_master_params_to_fp32 4 "2 --stage 0 --master 1" "4 --stage 2 --offload 1")
# bf16 moments are saved widened to fp32 (exact) and rounded back on load: lossless.
zs_ckpt_resume(ckpt_resume_moments_bf16_2to4_stage3to1 4 "2 --stage 3" "4 --stage 1" --moments-bf16 1 --reftol 5e-4)
# The precision modes on the host tier: a checkpoint holds the same canonical arrays wherever the
# state lived (bf16 moments widened from the arena, the arena's params or a host fp32 master as
# the master), so offloaded, budgeted and device runs resume into each other bit for bit.
zs_ckpt_resume(ckpt_resume_moments_bf16_offload_to_device 4 "2 --stage 3 --offload 3" "4 --stage 1" --moments-bf16 1 --reftol 5e-4)
zs_ckpt_resume(ckpt_resume_moments_bf16_device_to_offload 6 "2 --stage 1" "3 --stage 2 --offload 1" --moments-bf16 1 --reftol 5e-4)
zs_ckpt_resume(ckpt_resume_master_params_offload_to_device 4 "2 --stage 2 --offload 1" "4 --stage 3" --master 1)
zs_ckpt_resume(ckpt_resume_both_offload_to_budget 12 "2 --stage 3 --offload 3" "4 --stage 3 --budget-frac 0.2" --master 1 --moments-bf16 1 --reftol 5e-4)
zs_ckpt_resume(ckpt_resume_both_budget_to_device 6 "2 --stage 1 --budget-frac 0.2" "3 --stage 3" --master 1 --moments-bf16 1 --reftol 5e-4)
# The remainder master and lean mode across tiers: the checkpoint holds the master joined from
# params and remainders (wherever the remainders lived) or lean's bf16 params, and m, v; lean's
# rounding stream continues from the saved step.
zs_ckpt_resume(ckpt_resume_rem_offload_to_device 4 "2 --stage 3 --offload 3" "4 --stage 1" --bf16 1 --master 2 --reftol 3e-2)
zs_ckpt_resume(ckpt_resume_rem_device_to_budget 6 "2 --stage 1" "3 --stage 3 --budget-frac 0.2" --bf16 1 --master 2 --moments-bf16 1 --reftol 3e-2)
zs_ckpt_resume(ckpt_resume_lean_offload_to_device 4 "2 --stage 2 --offload 1" "4 --stage 3" --bf16 1 --master 3 --reftol 3e-2)
zs_ckpt_resume(ckpt_resume_lean_budget_to_offload 12 "4 --stage 3 --budget-frac 0.2" "3 --stage 3 --offload 3" --bf16 1 --master 3 --moments-bf16 1 --reftol 3e-2)
add_test(NAME ckpt_crash COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ckpt_crash.sh ${ZS_MPIEXEC}
                                 $<TARGET_FILE:test_engine_train>)
set_tests_properties(ckpt_crash PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 120
                                           LABELS "mpi;ckpt" PROCESSORS 3)

# Asynchronous saves (ckpt_async): staged, committed later, byte for byte the synchronous save's,
# a failed background write survivable; and checkpoint tests of the other kinds re-run with
# ZS_CKPT_ASYNC=1 (resume bits, a kill mid-write, a full disk, the NVMe tier, a staging budget).
zs_exe(test_ckpt_async SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ckpt_async.c)
zs_mpi_test(ckpt_async_np2_stage3 test_ckpt_async NP 2 ARGS --stage 3 LABELS ckpt)
zs_mpi_test(ckpt_async_np3_stage2_offload test_ckpt_async NP 3 ARGS --stage 2 --offload 1 LABELS ckpt)
# The background write through the page cache (ckpt_direct 0) instead of O_DIRECT.
zs_mpi_test(ckpt_async_np2_buffered test_ckpt_async NP 2 ARGS --stage 1 LABELS ckpt)
set_property(TEST ckpt_async_np2_buffered APPEND PROPERTY ENVIRONMENT ZS_CKPT_DIRECT=0)
function(zs_ckpt_async_variant test)
  add_test(NAME ${test}_async COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${PROJECT_BINARY_DIR}
                                      -R "^${test}$" --output-on-failure --no-tests=error)
  set_tests_properties(${test}_async PROPERTIES ENVIRONMENT "ZS_CKPT_ASYNC=1;${ARGN}" TIMEOUT 150
                                                LABELS "mpi;ckpt" PROCESSORS 4)
endfunction()
zs_exe(test_ckpt_damage SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ckpt_damage.c)
zs_mpi_test(ckpt_damage_np1 test_ckpt_damage NP 1 ARGS --stage 0 LABELS ckpt)
zs_mpi_test(ckpt_damage_np2_stage3 test_ckpt_damage NP 2 ARGS --stage 3 LABELS ckpt)
zs_mpi_test(ckpt_damage_np3_stage2_offload test_ckpt_damage NP 3 ARGS --stage 2 --offload 1 LABELS ckpt)
# Small blocks: a damaged block near the end comes after blocks that check out (a one-pass load
# would already have written those).
set_tests_properties(ckpt_damage_np2_stage3 ckpt_damage_np3_stage2_offload
                     PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=256")
# The manifest and header parsers under libFuzzer (clang), for a bounded time.
add_test(NAME ckpt_fuzz COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ckpt_fuzz.sh ${PROJECT_SOURCE_DIR}
                                ${ZS_MPIEXEC} $<TARGET_FILE:test_engine_train> 30)
set_tests_properties(ckpt_fuzz PROPERTIES ENVIRONMENT "${ZS_TEST_ENV}" TIMEOUT 180 SKIP_RETURN_CODE 77
                                          LABELS "ckpt;fuzz")

zs_exe(test_ckpt_export SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ckpt_export.c)
zs_mpi_test(ckpt_export_np1_stage0 test_ckpt_export NP 1 ARGS --stage 0 LABELS ckpt)
zs_mpi_test(ckpt_export_np2_stage3 test_ckpt_export NP 2 ARGS --stage 3 LABELS ckpt)

# The NVMe tier: checkpoints stream from the tier's files and load back into them, byte-identical
# to the host-offload engine's; a tier file removed or truncated under a save, a load and an
# export; the host memory of a save/load bounded whatever the unit's size; world-size changes
# across tiers. Skipped (77) where the build folder cannot hold a tier (tmpfs).
zs_exe(test_ckpt_nvme SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ckpt_nvme.c)
zs_mpi_test(ckpt_nvme_np1_stage1 test_ckpt_nvme NP 1 ARGS ${CMAKE_CURRENT_BINARY_DIR} equal --stage 1 LABELS ckpt)
zs_mpi_test(ckpt_nvme_np2_stage3 test_ckpt_nvme NP 2 ARGS ${CMAKE_CURRENT_BINARY_DIR} equal --stage 3 LABELS ckpt)
zs_mpi_test(ckpt_nvme_np3_stage2 test_ckpt_nvme NP 3 ARGS ${CMAKE_CURRENT_BINARY_DIR} equal --stage 2 LABELS ckpt)
# Hybrid sharding (2 groups of 2): the replicas split the writing; the export's failed read is in
# the last rank's group only, so rank 0's group gathers on and the world's verdict on the tier is
# what keeps the file from being published.
zs_mpi_test(ckpt_nvme_np4_hybrid test_ckpt_nvme NP 4 ARGS ${CMAKE_CURRENT_BINARY_DIR} equal --stage 3 --group 2 LABELS ckpt)
zs_mpi_test(ckpt_nvme_memory test_ckpt_nvme NP 1 ARGS ${CMAKE_CURRENT_BINARY_DIR} memory LABELS ckpt)
# The precision modes on the tier (their own files): checkpoints and exports byte-identical to host
# offload's in the same mode, loads, and the tier's failures; blocks that start and end inside the
# tier's 4 KiB blocks (2-byte elements too).
zs_mpi_test(ckpt_nvme_rem_m16_np1_stage1 test_ckpt_nvme NP 1 ARGS ${CMAKE_CURRENT_BINARY_DIR} equal
            --stage 1 --bf16 1 --master remainder --moments-bf16 1 LABELS ckpt)
zs_mpi_test(ckpt_nvme_rem_np2_stage3 test_ckpt_nvme NP 2 ARGS ${CMAKE_CURRENT_BINARY_DIR} equal
            --stage 3 --bf16 1 --master remainder LABELS ckpt)
zs_mpi_test(ckpt_nvme_lean_np2_stage3 test_ckpt_nvme NP 2 ARGS ${CMAKE_CURRENT_BINARY_DIR} equal
            --stage 3 --bf16 1 --master lean LABELS ckpt)
zs_mpi_test(ckpt_nvme_params_m16_np2_stage2 test_ckpt_nvme NP 2 ARGS ${CMAKE_CURRENT_BINARY_DIR}
            equal --stage 2 --master params --moments-bf16 1 LABELS ckpt)
# ZS_MASTER_PARAMS with the param shards in the arena: no master file (the params are the master).
zs_mpi_test(ckpt_nvme_params_host_np2_stage3 test_ckpt_nvme NP 2 ARGS ${CMAKE_CURRENT_BINARY_DIR}
            equal --stage 3 --master params --offload-params 1 LABELS ckpt)
set(zs_ckpt_nvme_modes ckpt_nvme_rem_m16_np1_stage1 ckpt_nvme_rem_np2_stage3
    ckpt_nvme_lean_np2_stage3 ckpt_nvme_params_m16_np2_stage2 ckpt_nvme_params_host_np2_stage3)
set_tests_properties(${zs_ckpt_nvme_modes} PROPERTIES SKIP_RETURN_CODE 77
                     ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=65542")
add_test(NAME ckpt_nvme_cross COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/ckpt_nvme_cross.sh ${ZS_MPIEXEC}
                                      $<TARGET_FILE:test_ckpt_nvme> ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(ckpt_nvme_cross PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=65540"
                                                TIMEOUT 180 LABELS "mpi;ckpt" PROCESSORS 4)
set_tests_properties(ckpt_nvme_np1_stage1 ckpt_nvme_np2_stage3 ckpt_nvme_np3_stage2 ckpt_nvme_np4_hybrid ckpt_nvme_memory
                     PROPERTIES SKIP_RETURN_CODE 77)
# Blocks of 64 KiB + 4 bytes: the pieces written into the tier start and end inside its 4 KiB
# blocks.
set_tests_properties(ckpt_nvme_np2_stage3 PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=65540")
set_tests_properties(ckpt_nvme_cross PROPERTIES SKIP_RETURN_CODE 77)

# GPU readiness (tests/gpu_tests.md): checkpoints with a CUDA engine. Each runs under
# tests/gpu_expect.sh (skips without a GPU; else the CUDA run's engine banner must show up), the
# ranks of a CUDA half share the GPU through NCCL with per-rank NCCL_HOSTID.
if(ZS_HAVE_CUDA)
  # zs_ckpt_resume_cuda(name G "W1 OPTIONS" "W2 OPTIONS" EXPECT [COMMON]): ckpt_resume.sh with
  # --device cuda in either half, bit for bit against the straight 1-rank run (on the CPU unless
  # COMMON says --device cuda; the engine's AdamW gives the CPU's bits on CUDA).
  function(zs_ckpt_resume_cuda name g first second expect)
    add_test(NAME ${name}
             COMMAND bash ${ZS_TESTS_DIR}/gpu_expect.sh $<TARGET_FILE:zs_cuda_probe> "${expect}" --
                     bash ${CMAKE_CURRENT_LIST_DIR}/ckpt_resume_cuda.sh ${ZS_MPIEXEC}
                     $<TARGET_FILE:test_engine_train> ${g} ${first} ${second} ${ARGN})
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=200"
                         TIMEOUT 180 LABELS "mpi;ckpt;gpu" PROCESSORS 4)
  endfunction()
  set(zs_nccl "cuda:[0-9]+, comm nccl")
  zs_ckpt_resume_cuda(ckpt_cuda_resume_1to2_stage0to3 2 "1 --stage 0 --device cuda"
                      "2 --stage 3 --device cuda" "${zs_nccl}, world 2,")
  # CPU-saved -> CUDA-loaded (into a hybrid 2 x 2 layout), and CUDA-saved (offloaded optimizer
  # and params) -> CPU-loaded.
  zs_ckpt_resume_cuda(ckpt_cuda_resume_cpu2_to_cuda4_hybrid 4 "2 --stage 3"
                      "4 --stage 2 --group 2 --device cuda" "${zs_nccl}, world 4, shard group 2,")
  zs_ckpt_resume_cuda(ckpt_cuda_resume_cuda2_offload_to_cpu3 6 "2 --stage 3 --offload 3 --device cuda"
                      "3 --stage 1" "${zs_nccl}, world 2, .*; offload optimizer params:")
  # bf16 params on CUDA throughout (the straight run too: --device cuda is common); one rank, as
  # the CPU bf16 pair above (bf16 sums over ranks do not give the 1-rank bits).
  zs_ckpt_resume_cuda(ckpt_cuda_resume_bf16_stage0to3 6 "1 --stage 0" "1 --stage 3"
                      "${zs_nccl}, world 1, .*bf16 params" --device cuda --bf16 1 --reftol 3e-2)

  # test_ckpt_cuda: save on one device and load on the other, both ways, the safetensors export on
  # CUDA at stages 0 and 3 (byte-identical to the other device's export of the same state), and
  # the resumed weights against a straight run, all bit for bit.
  zs_exe(test_ckpt_cuda SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_ckpt_cuda.c LIBS CUDA::cudart)
  function(zs_ckpt_cuda name np expect)
    add_test(NAME ${name}
             COMMAND bash ${ZS_TESTS_DIR}/gpu_expect.sh $<TARGET_FILE:zs_cuda_probe> "${expect}"
                     "test_ckpt_cuda: OK" -- ${ZS_MPIEXEC} --oversubscribe -np ${np}
                     ${ZS_TESTS_DIR}/with_hostid.sh $<TARGET_FILE:test_ckpt_cuda> ${ARGN})
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ZS_TEST_ENV};ZS_TEST_CKPT_BLOCK_BYTES=65536"
                         TIMEOUT 180 LABELS "mpi;ckpt;gpu" PROCESSORS ${np})
  endfunction()
  zs_ckpt_cuda(ckpt_cuda_cross_np1_cuda0_cpu0 1 "${zs_nccl}, world 1," --first cuda:0 --second cpu:0)
  zs_ckpt_cuda(ckpt_cuda_cross_np2_cpu3_cuda3 2 "${zs_nccl}, world 2," --first cpu:3 --second cuda:3)
  zs_ckpt_cuda(ckpt_cuda_cross_np3_cuda0_cpu2 3 "${zs_nccl}, world 3," --first cuda:0 --second cpu:2)
  zs_ckpt_cuda(ckpt_cuda_cross_np2_cuda3_offload_cuda1 2 "${zs_nccl}, world 2, .*; offload optimizer params:"
               --first cuda:3:3 --second cuda:1)
  # bf16 params on one rank (no sum over ranks, whose bf16 rounding could differ by device).
  zs_ckpt_cuda(ckpt_cuda_cross_np1_bf16_cuda3_cpu0 1 "${zs_nccl}, world 1, .*bf16 params"
               --first cuda:3 --second cpu:0 --bf16 1)
endif()
zs_ckpt_async_variant(ckpt_resume_offload_2to4)
zs_ckpt_async_variant(ckpt_crash)
zs_ckpt_async_variant(ckpt_damage_np2_stage3)
zs_ckpt_async_variant(ckpt_nvme_np2_stage3)
zs_ckpt_async_variant(ckpt_nvme_memory ZS_CKPT_STAGING_BYTES=2097152)
