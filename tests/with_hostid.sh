#!/usr/bin/env bash
# Runs "$@" with a per-rank NCCL_HOSTID, so NCCL treats ranks sharing one GPU as different hosts
# and connects them over sockets (slow, for correctness only). Used under mpirun. The ranks are all
# on this machine, so NCCL's sockets (bootstrap and transport) stay on the loopback interface
# instead of whichever interface NCCL would pick (one may be down or unreachable in a container).
export NCCL_HOSTID="zshard-test-host-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
export NCCL_SOCKET_IFNAME=lo
exec "$@"
