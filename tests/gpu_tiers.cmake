# The GPU tests in the order a GPU session needs their answers (scripts/device-first.sh runs them
# tier by tier; a plain `ctest -L gpu` runs them in the same order through COST). Every GPU test
# gets exactly one label gpu-t1 .. gpu-t4 (ctest gpu_tests_marked checks it); one not listed here
# is tier 4. Within a tier the listed order is the run order.
#   gpu-t1  correctness on one GPU without multi-rank NCCL: NCCL's one-rank communicator first
#           (every one-rank CUDA engine opens one, so a broken NCCL shows here before it is blamed
#           on a kernel), every kernel against its CPU twin, AdamW in every master mode against
#           the CPU's bits (the engine at stages 0 and 3 over host-staged MPI), GPT-2 CUDA against
#           the CPU at one rank, then SGD and Lion beside AdamW against the CPU's bits, Muon and
#           Adafactor against the float64 reference
#   gpu-t2  NCCL with 2 ranks on the one GPU: the collectives, the engine's stage 3 against one
#           rank, GPT-2 at 2 ranks
#   gpu-t3  d12-sized kernels, pinned memory, offload and the NVMe tier at one rank
#   gpu-t4  the rest: 3-4 ranks, hybrid groups, checkpoints across devices, transformers
set(ZS_GPU_T1
    comm_nccl_np1
    kernels_mem_cuda
    test_kernels_cuda
    test_kernels_cuda_llama
    test_kernels_cuda_engine
    test_kernels_cuda_whole
    device_cuda_sq_bins
    engine_cuda_det_np2_stage0
    engine_cuda_det_np2_stage3
    engine_cuda_np1_stage0_bf16
    engine_cuda_master_rem_m16_np1_stage1
    engine_cuda_lean_m16_np2_stage2
    gpt2_cuda_np1_fp32
    gpt2_cuda_np1_bf16
    engine_cuda_group_opts_np2_stage3
    engine_cuda_group_opts_lean_m16_np2_stage1
    engine_cuda_train_np1_muon
    engine_cuda_train_np1_adafactor)
set(ZS_GPU_T2
    comm_nccl_np2
    engine_cuda_nccl_np2_stage3
    gpt2_cuda_np2_bf16
    engine_cuda_nccl_np2_stage1
    engine_cuda_overlap
    engine_cuda_timeout
    gpt2_cuda_np2_fp32)
set(ZS_GPU_T3
    kernels_cuda_d12
    offload_pinned_cuda
    offload_nvme_cuda
    engine_cuda_offload_opt_np1_stage1
    engine_cuda_offload_params_np1_stage3
    engine_cuda_hostmodes_moments_bf16_params_np1_stage3
    engine_cuda_hostmodes_rem_params_np1_stage3
    engine_cuda_nvme_some_np1_stage1
    engine_cuda_nonfinite_np1_bf16
    engine_cuda_pool
    ckpt_cuda_cross_np1_cuda0_cpu0
    ckpt_cuda_cross_np1_bf16_cuda3_cpu0)

# zs_gpu_tier(test): sets the test's tier label and COST (tier 1 highest; listed order within).
function(zs_gpu_tier t)
  set(cost 1000)
  set(tier 4)
  foreach(n 1 2 3)
    list(FIND ZS_GPU_T${n} ${t} i)
    if(i GREATER -1)
      set(tier ${n})
      math(EXPR cost "(5 - ${n}) * 1000 - ${i}")
      break()
    endif()
  endforeach()
  set_property(TEST ${t} APPEND PROPERTY LABELS gpu-t${tier})
  set_tests_properties(${t} PROPERTIES COST ${cost})
endfunction()
