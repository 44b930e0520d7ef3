#!/usr/bin/env bash
# Runs HERE (a Debian machine with apt): downloads the host dependencies the GPU machine lacks
# (OpenMPI, hwloc, jemalloc, OpenBLAS, cJSON, xxHash, liburing, pkg-config and their runtime
# libraries) as
# .deb files and extracts them into .deps/root, which travels with the working tree to the device
# machine (no internet, no Debian packages there). scripts/device-first.sh then stages it at the fixed prefix of
# scripts/device-env.sh (a copy: .deps never grows), and
# scripts/device-rehearsal.sh proves here that this is all the GPU machine needs. Every carried
# library and program is checked to find the libraries it links (a plug-in that cannot is
# dropped, anything else is an error naming the missing library).
#
#   scripts/fetch-device-deps.sh        # idempotent: wipes and refills .deps/root
#
# Docs, man pages, locales, static archives, Fortran modules and LAPACK are dropped, and
# OpenBLAS's 35 MB DYNAMIC_ARCH library is stored gzipped (device-env.sh unpacks it), so the
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
  libnl-route-3-200 libpmix2 libmunge2 libuuid1 libpsm-infinipath1 libpsm2-2 libucx0 libhwloc-plugins
  # hwloc, NUMA
  libhwloc-dev libhwloc15 libnuma-dev libnuma1 libpciaccess0
  # jemalloc
  libjemalloc-dev libjemalloc2
  # OpenBLAS (pthread flavour) and the Fortran runtime it links
  libopenblas-dev libopenblas-pthread-dev libopenblas0 libopenblas0-pthread libgfortran5
  libquadmath0
  # cJSON (checkpoint manifests, the GPT-2 config reader) and xxHash (checkpoint checksums)
  libcjson-dev libcjson1 libxxhash-dev libxxhash0
  # liburing (io_uring: the NVMe tier's I/O)
  liburing-dev liburing2
  # pkg-config (CMake's pkg_check_modules needs it)
  pkgconf pkgconf-bin libpkgconf3 pkg-config
)

rm -rf "$DEPS/debs" "$ROOT"
mkdir -p "$DEPS/debs" "$ROOT"
# apt-get download needs current package lists: a machine whose packages were all installed long
# ago may have none or stale ones, so a failure is retried once after an update.
if ! (cd "$DEPS/debs" && apt-get -q download "${PKGS[@]}" >/dev/null 2>&1); then
  apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null 2>&1 || true
  if ! (cd "$DEPS/debs" && apt-get -q download "${PKGS[@]}" >/dev/null); then
    echo "fetch-device-deps: apt-get download failed (after apt-get update)" >&2
    exit 1
  fi
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
[ -e "$ROOT/usr/lib/libpsm1/libpsm_infinipath.so.1.16" ] &&
  ln -sf ../libpsm1/libpsm_infinipath.so.1.16 "$ROOT/$A/libpsm_infinipath.so.1"
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

# gcc on Debian searches include/x86_64-linux-gnu by default, so .pc files never name it; the
# carried tree is no system folder: add it to the Cflags of every .pc whose includedir is the
# plain ${prefix}/include (hwloc.h includes hwloc/autogen/config.h, which lives there).
# shellcheck disable=SC2016 # ${prefix} and ${includedir} are pkg-config's, not the shell's
grep -l -x 'includedir=${prefix}/include' -r "$ROOT" --include='*.pc' | while read -r pc; do
  sed -i -E '/^Cflags:/{/-I\$\{includedir\}\/x86_64-linux-gnu/!s#-I\$\{includedir\}( |$)#-I${includedir} -I${includedir}/x86_64-linux-gnu\1#}' "$pc"
done

# Every shared library and program must find what it links: in the tree or in the libraries
# every CUDA machine has (BASE). A plug-in (hwloc, Open MPI, PMIx, UCX, libfabric components,
# loaded with dlopen) that cannot is dropped, so that nothing prints load errors there; a core
# library or program that cannot is an error (e.g. libpmix.so.2 needs libmunge.so.2).
BASE="libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libstdc++.so.6 libgcc_s.so.1
  libz.so.1 libudev.so.1 ld-linux-x86-64.so.2 libutil.so.1 libresolv.so.2"
# shellcheck source=scripts/device-libdirs.sh
. scripts/device-libdirs.sh
unresolved() { # prints "NEEDED<TAB>file" for each dependency not on device-env.sh's search path
  local have f n d dirs=()
  for d in "${DEVICE_LIBDIRS[@]}"; do [ -d "$ROOT/$d" ] && dirs+=("$ROOT/$d"); done
  have=$(find "${dirs[@]}" -maxdepth 1 \( -type f -o -type l \) -name '*.so*' -printf '%f\n' | sort -u)
  have="$have"$'\n'$(tr -s ' \n' '\n' <<<"$BASE")
  find "$ROOT" -type f \( -name '*.so*' -o -path '*/bin/*' \) -print0 |
    while IFS= read -r -d '' f; do
      head -c4 "$f" | grep -q $'\x7fELF' || continue
      readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | while read -r n; do
        grep -qxF "$n" <<<"$have" || printf '%s\t%s\n' "$n" "$f"
      done
    done
}
for _ in 1 2 3 4 5; do # dropping a library can strand the plug-ins that link it: repeat
  mapfile -t bad < <(unresolved)
  [ "${#bad[@]}" -eq 0 ] && break
  core=()
  for b in "${bad[@]}"; do
    f=${b#*$'\t'}
    case "$f" in
      */hwloc/* | */openmpi3/mca_* | */pmix/mca_* | */ucx/* | */libfabric/* | */libfabric.so*)
        rm -f "$f" ;;
      *) core+=("$b") ;;
    esac
  done
  if [ "${#core[@]}" -ne 0 ]; then
    for b in "${core[@]}"; do
      echo "fetch-device-deps: ${b%%$'\t'*} is needed by ${b#*$'\t'} and not carried:" \
        "add its package to PKGS" >&2
    done
    exit 1
  fi
done
find "$ROOT" -xtype l -name 'libfabric.so*' -delete

# The big library travels compressed; device-env.sh restores it (gzip is everywhere).
for so in "$ROOT/$A"/openblas-pthread/libopenblas*-r*.so; do gzip -9 "$so"; done

echo "fetch-device-deps: $(du -sh "$ROOT" | cut -f1) in $ROOT ($(find "$ROOT" -type f | wc -l) files)"
