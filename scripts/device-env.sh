# Sourced by scripts/device-prebuild.sh and scripts/device-first.sh: the one fixed prefix that
# the build machine and the GPU machine share, the carried dependencies staged under it, the
# environment that finds them, and the CUDA configure + build.
#
# The prefix ($ZS_DEVICE_PREFIX, default /tmp/zshard-dev) holds
#   src    a symbolic link to the checkout (wherever it lies on either machine)
#   deps   .deps/root copied (OpenBLAS unpacked): OpenMPI, hwloc, jemalloc, ... (fetch-device-deps.sh)
#   build  the CUDA build tree: configured with -S $ZS_DEV/src, so the paths CTest files hard-code
#          (sources, build, mpiexec) are the same on both machines and a tree built here runs there
# Functions return non-zero on failure and print why on stderr; none exits the caller.
# shellcheck shell=bash
ZS_DEV=${ZS_DEVICE_PREFIX:-/tmp/zshard-dev}
DEV_SRC=$ZS_DEV/src
DEV_DEPS=$ZS_DEV/deps
DEV_BUILD=$ZS_DEV/build

# dev_stage REPO: the link to the checkout and the staged dependencies (copied again only when
# .deps/root changed: names and sizes, not times, which a carried copy may not keep).
dev_stage() {
  local repo=$1 stamp gz
  if [ ! -d "$repo/.deps/root/usr/lib/x86_64-linux-gnu" ]; then
    echo "device-env: $repo/.deps/root is missing: run scripts/fetch-device-deps.sh on the build" \
      "machine and carry .deps" >&2
    return 1
  fi
  mkdir -p "$ZS_DEV" || return 1
  ln -sfn "$repo" "$DEV_SRC" || return 1
  stamp=$(find "$repo/.deps/root" -printf '%P %s\n' | sort | cksum | cut -d' ' -f1)
  if [ "$(cat "$DEV_DEPS.stamp" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$DEV_DEPS" && cp -a "$repo/.deps/root" "$DEV_DEPS" || return 1
    for gz in "$DEV_DEPS"/usr/lib/x86_64-linux-gnu/openblas-pthread/*.so.gz; do # gzipped to travel
      [ -e "$gz" ] && { gzip -dc "$gz" >"${gz%.gz}" && rm -f "$gz" || return 1; }
    done
    echo "$stamp" >"$DEV_DEPS.stamp"
  fi
}

# dev_env REPO: PATH, LD_LIBRARY_PATH and the relocation variables of the staged dependencies.
# Library order: the carried ones, NCCL's wheel (nvidia/nccl/lib: the toolkit may have no NCCL),
# the toolkit's (/usr/local/cuda/lib64: cuBLAS and the runtime the tree was built against), then
# the CUDA wheels where the toolkit lacks one (CUDA 13 wheels install into nvidia/cu13/lib).
# dev_wheel_libs NAME...: the lib folders of the named nvidia wheels on python3's sys.path, each
# followed by ':'.
dev_wheel_libs() {
  python3 -c "import os, sys
for p in sys.path:
    for lib in sys.argv[1:]:
        d = os.path.join(p or '.', 'nvidia', lib, 'lib')
        if os.path.isdir(d): print(os.path.abspath(d))" "$@" 2>/dev/null | awk '!s[$0]++' | tr '\n' ':'
}

dev_env() {
  local repo=$1 d carried="" nccl cuda
  nccl=$(dev_wheel_libs nccl)
  cuda=$(dev_wheel_libs cu13 cublas cuda_runtime) # only where the toolkit lacks a library
  # shellcheck source=scripts/device-libdirs.sh
  . "$repo/scripts/device-libdirs.sh" # the folders fetch-device-deps.sh checked the libraries against
  for d in "${DEVICE_LIBDIRS[@]}"; do carried+="$DEV_DEPS/$d:"; done
  local A=$DEV_DEPS/usr/lib/x86_64-linux-gnu
  export PATH=$DEV_DEPS/usr/bin:/usr/local/cuda/bin:$PATH
  # The NCCL that CMake linked goes in front after configure (dev_nccl_first). No empty entry:
  # it would search the current folder.
  d=${carried}${nccl}/usr/local/cuda/lib64:${cuda}${LD_LIBRARY_PATH:-}
  export LD_LIBRARY_PATH=${d%:}
  export PKG_CONFIG_PATH=$A/pkgconfig:$DEV_DEPS/usr/share/pkgconfig # ${pcfiledir}-relative .pc files
  export CMAKE_PREFIX_PATH=$DEV_DEPS/usr
  export OPAL_PREFIX=$DEV_DEPS/usr # Open MPI: relocated install (wrappers, components, help)
  export PMIX_INSTALL_PREFIX=$A/pmix2
  export PMIX_MCA_mca_base_component_path=$A/pmix2/lib/pmix # also for singletons (no mpirun)
  export HWLOC_PLUGINS_PATH=$A/hwloc
  export OMPI_MCA_mca_base_component_show_load_errors=0
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
  command -v ssh >/dev/null || export OMPI_MCA_plm_rsh_agent=false # local launches only
}

# dev_nccl_first BUILD: the NCCL library the build linked, in front of LD_LIBRARY_PATH.
dev_nccl_first() {
  local lib
  lib=$(sed -n 's/^ZS_NCCL_LIB:[A-Z]*=//p' "$1/CMakeCache.txt" 2>/dev/null)
  [ -n "$lib" ] && [ -e "$lib" ] && export LD_LIBRARY_PATH=$(dirname "$lib"):$LD_LIBRARY_PATH
  return 0
}

# dev_build ARCH JOBS LOG: configures and builds $DEV_BUILD (RelWithDebInfo, CUDA on) against the
# staged dependencies; keeps going past a broken target so that what did build can run.
dev_build() {
  local arch=$1 jobs=$2 log=$3 gen=() keep=(-k)
  [ ! -f "$DEV_BUILD/CMakeCache.txt" ] && command -v ninja >/dev/null && gen=(-G Ninja)
  cmake "${gen[@]}" -S "$DEV_SRC" -B "$DEV_BUILD" -DZS_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" -DPKG_CONFIG_EXECUTABLE="$DEV_DEPS/usr/bin/pkgconf" \
    -DMPI_C_COMPILER="$DEV_DEPS/usr/bin/mpicc" -DMPIEXEC_EXECUTABLE="$DEV_DEPS/usr/bin/mpirun" \
    >>"$log" 2>&1 || { echo "configure failed: $(grep -m1 -A2 'CMake Error' "$log" | tr -s ' \n' ' ' | cut -c1-200)"; return 1; }
  dev_nccl_first "$DEV_BUILD"
  [ -f "$DEV_BUILD/build.ninja" ] && keep=(-k 0)
  cmake --build "$DEV_BUILD" -j"$jobs" -- "${keep[@]}" >>"$log" 2>&1 && return 0
  echo "build failed: $(grep -oE '(FAILED: [^ ]+|\*\*\* \[[^]]*\])' "$log" | head -5 | tr '\n' ' ')"
  return 1
}

# dev_python_here BUILD: a tree built on the other machine names that machine's python3 in its
# CTest files (the comparisons, the test scripts); point them at this machine's python3.
dev_python_here() {
  local here there f
  here=$(command -v python3) || return 0
  for there in $(sed -nE 's/^[A-Za-z0-9_]*(PYTHON|Python)[A-Za-z0-9_]*:(FILEPATH|INTERNAL|STRING)=(\/.+)$/\3/p' \
    "$1/CMakeCache.txt" 2>/dev/null | sort -u); do
    [ "$there" = "$here" ] && continue
    find "$1" -name CTestTestfile.cmake -print0 | while IFS= read -r -d '' f; do
      sed -i "s#$there#$here#g" "$f"
    done
    echo "CTest files: $there -> $here"
  done
}

# dev_untar PACK DEST [MEMBER]: extracts the .tar.xz PACK into DEST (or MEMBER to stdout) with
# tar, or with Python's tarfile where tar cannot run xz (an image without xz-utils).
dev_untar() {
  local pack=$1 dest=$2 member=${3:-}
  if [ -n "$member" ]; then
    tar -xJOf "$pack" "$member" 2>/dev/null && return 0
    python3 -c "import sys, tarfile
t = tarfile.open(sys.argv[1], 'r:xz'); sys.stdout.write(t.extractfile(sys.argv[2]).read().decode())" \
      "$pack" "$member"
    return
  fi
  tar -C "$dest" -xJf "$pack" 2>/dev/null && return 0
  python3 -c "import sys, tarfile
tarfile.open(sys.argv[1], 'r:xz').extractall(sys.argv[2])" "$pack" "$dest"
}

# dev_source_hash: one hash of every file under the folders the build and the tests read, in a
# fixed order, so that a prebuilt tree can tell whether the checkout it meets is the one it was
# built from (no git there). Prints the hash.
dev_source_hash() {
  (cd "$DEV_SRC/" && find CMakeLists.txt cmake include src tests examples bench \
    -type f ! -name '*.md' ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z |
    xargs -0 sha256sum | sha256sum | cut -c1-16)
}
