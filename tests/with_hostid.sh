#!/usr/bin/env bash
# Runs "$@" with a per-rank NCCL_HOSTID, so NCCL treats ranks sharing one GPU as different hosts
# and connects them over sockets (slow, for correctness only). Used under mpirun.
export NCCL_HOSTID="zshard-test-host-${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
exec "$@"
