# Sourced by scripts/fetch-device-deps.sh and scripts/device-env.sh: the folders of the carried
# tree (relative to its root) that device-env.sh puts on LD_LIBRARY_PATH, in that order. The
# fetch script checks that every library a carried program or library needs is in one of them
# (or is one every CUDA machine has), so a library carried elsewhere in the tree is caught here
# rather than on the GPU machine.
# shellcheck disable=SC2034 # used by the scripts that source this file
DEVICE_LIBDIRS=(
  usr/lib/x86_64-linux-gnu
  lib/x86_64-linux-gnu
  usr/lib/x86_64-linux-gnu/openmpi/lib
  usr/lib/x86_64-linux-gnu/openblas-pthread
  usr/lib/x86_64-linux-gnu/pmix2/lib
)
