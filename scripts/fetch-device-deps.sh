#!/usr/bin/env bash
# Runs HERE (a Debian machine with apt): downloads the host dependencies the GPU machine lacks
# (OpenMPI, hwloc, jemalloc, OpenBLAS, pkg-config and their runtime libraries) as .deb files and
# extracts them into .deps/root, which travels with the working tree to the device machine
# (no internet, no Debian packages there). scripts/device-check.sh then builds against it.
#
#   scripts/fetch-device-deps.sh        # idempotent: wipes and refills .deps/root
#
# Docs, man pages, locales, static archives, Fortran modules and LAPACK are dropped, and
# OpenBLAS's 35 MB DYNAMIC_ARCH library is stored gzipped (device-check.sh unpacks it), so the
# folder stays near 40 MiB (the whole carried tree may be 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS=.deps
ROOT=$DEPS/root

# Build-time (-dev, tools) and run-time packages. The run-time closure was taken from
# `apt-cache depends` of libopenmpi3, openmpi-bin, libhwloc15, libjemalloc2, libopenblas0-pthread;
# libraries every CUDA machine already has (libc6, libstdc++6, libgcc-s1, zlib1g, libudev1) are
# left out.
PKGS=(
  # OpenMPI 4.1: headers, wrappers, mpirun/orted, MCA components and help texts
  libopenmpi-dev openmpi-bin openmpi-common libopenmpi3
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libibverbs1 librdmacm1 libnl-3-200
  libnl-route-3-200 libpmix2 libpsm-infinipath1 libpsm2-2 libucx0 libhwloc-plugins
  # hwloc, NUMA
  libhwloc-dev libhwloc15 libnuma-dev libnuma1
  # jemalloc
  libjemalloc-dev libjemalloc2
  # OpenBLAS (pthread flavour) and the Fortran runtime it links
  libopenblas-dev libopenblas-pthread-dev libopenblas0 libopenblas0-pthread libgfortran5
  libquadmath0
  # cJSON (checkpoint manifests, the GPT-2 config reader) and xxHash (checkpoint checksums)
  libcjson-dev libcjson1 libxxhash-dev libxxhash0
  # pkg-config (CMake's pkg_check_modules needs it)
  pkgconf pkgconf-bin libpkgconf3 pkg-config
)

rm -rf "$DEPS/debs" "$ROOT"
mkdir -p "$DEPS/debs" "$ROOT"
if ! (cd "$DEPS/debs" && apt-get download "${PKGS[@]}" >/dev/null); then
  echo "apt-get download failed: run 'apt-get update' first" >&2
  exit 1
fi
for deb in "$DEPS"/debs/*.deb; do dpkg -x "$deb" "$ROOT"; done
rm -rf "$DEPS/debs"

# Drop what the build and the tests never read.
rm -rf "$ROOT"/usr/share/{doc,man,info,lintian,locale,bug,javascript} "$ROOT"/usr/share/openmpi/doc
find "$ROOT" -name '*.a' -delete
find "$ROOT" -name '*.la' -delete
find "$ROOT" -name '*.mod' -delete # Fortran modules
rm -rf "$ROOT"/usr/lib/x86_64-linux-gnu/fortran "$ROOT"/usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack*

# What Debian's alternatives system would have linked (dpkg -x runs no maintainer scripts).
A=usr/lib/x86_64-linux-gnu
ln -sf mpicc.openmpi "$ROOT/usr/bin/mpicc"
ln -sf mpirun.openmpi "$ROOT/usr/bin/mpirun"
ln -sf mpiexec.openmpi "$ROOT/usr/bin/mpiexec"
for f in libopenblas.so libopenblas.so.0 libblas.so libblas.so.3; do
  [ -e "$ROOT/$A/openblas-pthread/$f" ] && ln -sf "openblas-pthread/$f" "$ROOT/$A/$f"
done
mkdir -p "$ROOT/$A/pkgconfig"
for pc in "$ROOT/$A"/openblas-pthread/pkgconfig/*.pc; do
  [ -e "$pc" ] && cp "$pc" "$ROOT/$A/pkgconfig/"
done
[ -e "$ROOT/$A/pkgconfig/openblas.pc" ] ||
  cp "$ROOT/$A/openblas-pthread/pkgconfig/openblas-pthread.pc" "$ROOT/$A/pkgconfig/openblas.pc"
# .pc files say /usr: make every path relative to the file itself (${pcfiledir}), so pkg-config
# finds headers and libraries wherever the tree lands, with no sysroot that would also bend the
# paths of other .pc files (zshard's own, in the install test).
find "$ROOT" -name '*.pc' -type l | while read -r pc; do # ${pcfiledir} is the link's folder
  cp --remove-destination "$(readlink -f "$pc")" "$pc"
done
find "$ROOT" -name '*.pc' -type f | while read -r pc; do
  rel=$(realpath --relative-to="$(dirname "$pc")" "$ROOT")
  sed -i -E "s#^([A-Za-z_]+)=/usr#\1=\${pcfiledir}/$rel/usr#" "$pc"
done
[ -e "$ROOT/usr/include/cblas.h" ] ||
  ln -sf "x86_64-linux-gnu/openblas-pthread/cblas.h" "$ROOT/usr/include/cblas.h"

# The big library travels compressed; device-check.sh restores it (gzip is everywhere).
for so in "$ROOT/$A"/openblas-pthread/libopenblas*-r*.so; do gzip -9 "$so"; done

echo "fetch-device-deps: $(du -sh "$ROOT" | cut -f1) in $ROOT ($(find "$ROOT" -type f | wc -l) files)"
