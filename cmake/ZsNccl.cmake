# Finds NCCL for the CUDA build and sets ZS_NCCL_LIB (the library file) and ZS_NCCL_INC (the
# folder of nccl.h), both from one installation. Looked for, in this order:
#   1. NCCL_ROOT / NCCL_HOME (CMake variables or environment): <root>/lib|lib64 and <root>/include;
#   2. the Python wheel (nvidia-nccl-cu12/cu13: site-packages/nvidia/nccl/{lib,include}) of the
#      python3 on PATH, as on machines whose NCCL came with PyTorch;
#   3. the CUDA toolkit's folders, then the system's.
# The wheel ships only libnccl.so.2 (no libnccl.so link), so both names are accepted. The folder
# of the library found goes into the build tree's RUNPATH (CMake does that for libraries linked
# by full path), so the tests find it without LD_LIBRARY_PATH.
set(zs_nccl_roots)
foreach(v NCCL_ROOT NCCL_HOME)
  if(DEFINED ${v})
    list(APPEND zs_nccl_roots ${${v}})
  endif()
  if(DEFINED ENV{${v}})
    list(APPEND zs_nccl_roots $ENV{${v}})
  endif()
endforeach()
find_program(ZS_PYTHON3 NAMES python3)
if(ZS_PYTHON3)
  execute_process(
    COMMAND ${ZS_PYTHON3} -c "import os, sys
for p in sys.path:
    d = os.path.join(p or '.', 'nvidia', 'nccl')
    if os.path.isdir(os.path.join(d, 'lib')):
        print(os.path.abspath(d))"
    OUTPUT_VARIABLE zs_nccl_wheels OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET TIMEOUT 30)
  string(REPLACE "\n" ";" zs_nccl_wheels "${zs_nccl_wheels}")
  list(APPEND zs_nccl_roots ${zs_nccl_wheels})
endif()
set(zs_nccl_names nccl libnccl.so.2)
foreach(v ZS_NCCL_LIB ZS_NCCL_INC) # a cached find that is gone (a moved wheel) is looked up again
  if(${v} AND NOT EXISTS "${${v}}")
    unset(${v} CACHE)
  endif()
endforeach()
# An explicit root or a wheel wins over the toolkit's copy: each root is taken only when it holds
# both the library and nccl.h, so a header of one NCCL never meets the library of another.
foreach(root ${zs_nccl_roots})
  if(ZS_NCCL_LIB AND ZS_NCCL_INC)
    break()
  endif()
  unset(zs_lib)
  unset(zs_inc)
  find_library(zs_lib NAMES ${zs_nccl_names} PATHS ${root} PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH
               NO_CACHE)
  find_path(zs_inc nccl.h PATHS ${root} PATH_SUFFIXES include NO_DEFAULT_PATH NO_CACHE)
  if(zs_lib AND zs_inc)
    set(ZS_NCCL_LIB ${zs_lib} CACHE FILEPATH "NCCL library" FORCE)
    set(ZS_NCCL_INC ${zs_inc} CACHE PATH "folder of nccl.h" FORCE)
  elseif(zs_lib OR zs_inc)
    message(STATUS "zshard: NCCL under ${root} is incomplete (library: ${zs_lib}, nccl.h: "
                   "${zs_inc}): skipped")
  endif()
endforeach()
find_library(ZS_NCCL_LIB NAMES ${zs_nccl_names} HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
find_path(ZS_NCCL_INC nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
if(NOT ZS_NCCL_LIB OR NOT ZS_NCCL_INC)
  message(FATAL_ERROR "NCCL not found (library: ${ZS_NCCL_LIB}, nccl.h: ${ZS_NCCL_INC}): install "
                      "it with the CUDA toolkit or the nvidia-nccl-cu13 wheel, or set NCCL_ROOT to "
                      "the folder holding lib/ and include/")
endif()
message(STATUS "zshard: NCCL ${ZS_NCCL_LIB} (nccl.h in ${ZS_NCCL_INC})")
# What a pkg-config consumer links: -lnccl needs libnccl.so, the wheel has libnccl.so.2 only.
get_filename_component(ZS_NCCL_DIR ${ZS_NCCL_LIB} DIRECTORY)
get_filename_component(zs_nccl_file ${ZS_NCCL_LIB} NAME)
if(zs_nccl_file STREQUAL "libnccl.so")
  set(ZS_NCCL_LINK_FLAG "-lnccl")
else()
  set(ZS_NCCL_LINK_FLAG "-l:${zs_nccl_file}")
endif()
