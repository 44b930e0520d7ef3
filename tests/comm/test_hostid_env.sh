#!/usr/bin/env bash
# tests/with_hostid.sh, the prefix under mpirun of the tests that put several NCCL ranks on one
# GPU: each rank must get its own NCCL_HOSTID (from OMPI_COMM_WORLD_RANK, else PMI_RANK) and
# NCCL_SOCKET_IFNAME=lo, whatever the caller's environment says.
# Usage: test_hostid_env.sh [PATH/TO/with_hostid.sh]   (default: the one in tests/)
set -u
script=${1:-$(dirname "$0")/../with_hostid.sh}
fail=0
# check LABEL WANT_HOSTID ENV...: runs `with_hostid.sh env` with ENV and checks both variables.
check() {
  local label=$1 want=$2 out
  shift 2
  if ! out=$(env -u OMPI_COMM_WORLD_RANK -u PMI_RANK NCCL_SOCKET_IFNAME=eth0 "$@" bash "$script" env); then
    echo "FAIL ($label): '$script env' failed"
    fail=1
    return
  fi
  grep -qx "NCCL_HOSTID=$want" <<<"$out" ||
    { echo "FAIL ($label): $(grep '^NCCL_HOSTID=' <<<"$out" || echo 'no NCCL_HOSTID'), want $want"; fail=1; }
  grep -qx "NCCL_SOCKET_IFNAME=lo" <<<"$out" ||
    { echo "FAIL ($label): $(grep '^NCCL_SOCKET_IFNAME=' <<<"$out" || echo 'no NCCL_SOCKET_IFNAME'), want lo"; fail=1; }
}
check "Open MPI rank 3" zshard-test-host-3 OMPI_COMM_WORLD_RANK=3
check "PMI rank 2" zshard-test-host-2 PMI_RANK=2
check "no rank" zshard-test-host-0
if [ "$fail" = 0 ]; then echo "test_hostid_env: OK"; fi
exit "$fail"
