# CPU reference kernels and the public zs_k_* dispatch (label "kernels"): backward kernels against
# float64 finite differences, forwards against float64 references, argument validation; the
# Llama-family kernels (llama: embedding, RMSNorm, RoPE, SwiGLU; gqa: attention; llama_args;
# vocab: the vocabulary-parallel embedding and cross-entropy).
foreach(t layers attention xent args llama gqa llama_args vocab)
  zs_exe(test_kernels_cpu_${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels_cpu_${t}.c)
  zs_unit_test(kernels_cpu_${t} test_kernels_cpu_${t} LABELS kernels)
endforeach()
# The tensor-parallel layers (zs_k_tp_*) at tp 1, 2 and 4, with and without sequence
# parallelism, against float64 on every rank.
zs_exe(test_kernels_tp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels_tp.c)
zs_mpi_test(kernels_tp_np4 test_kernels_tp NP 4 LABELS kernels)
# zs_k_alloc / _free / _zero / _copy / _sync (the user's buffers) on the CPU; in CUDA builds
# the same program on the GPU too (it prints "SKIP: no CUDA device" and passes without one).
zs_exe(test_kernels_mem SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels_mem.c)
zs_unit_test(kernels_mem test_kernels_mem ARGS --device cpu LABELS kernels)
if(ZS_HAVE_CUDA)
  zs_unit_test(kernels_mem_cuda test_kernels_mem ARGS --device cuda LABELS kernels cuda)
endif()

# The deprecated zs_kernels_* names still compile and call zs_k_* (a user's program: public
# headers, the shared libraries).
zs_exe(test_kernels_deprecated SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels_deprecated.c PUBLIC_API)
zs_unit_test(kernels_deprecated_names test_kernels_deprecated LABELS kernels)

# CUDA kernel tests (GPU twins vs the CPU reference; test_kernels_cuda_llama: the Llama-family
# kernels). Only in CUDA builds; each test prints
# "SKIP: no CUDA device" and passes on a machine without a GPU.
if(ZS_HAVE_CUDA)
  foreach(t test_kernels_cuda test_kernels_cuda_engine test_kernels_cuda_llama)
    zs_exe(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.c LIBS CUDA::cudart)
    zs_unit_test(${t} ${t} TIMEOUT 300 LABELS cuda)
  endforeach()
  # Muon's and Adafactor's device steps against their CPU twins (gather and store bit for bit).
  zs_exe(test_kernels_cuda_whole SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels_cuda_whole.c
         LIBS CUDA::cudart CUDA::cublas)
  zs_unit_test(test_kernels_cuda_whole test_kernels_cuda_whole TIMEOUT 300 LABELS cuda)
endif()

# GPU readiness (tests/gpu_tests.md): every GPT-2 kernel at d12's real sizes (T 1024, C 768,
# 12 heads, 4C MLP, V 50257 padded to 50304) in fp32 and bf16 against the CPU twins, one relative
# error norm per array (the bounds and their reasons are in the file).
if(ZS_HAVE_CUDA)
  zs_exe(test_kernels_cuda_d12 SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kernels_cuda_d12.c
         LIBS CUDA::cudart)
  zs_unit_test(kernels_cuda_d12 test_kernels_cuda_d12 TIMEOUT 300 LABELS kernels cuda gpu)
endif()
