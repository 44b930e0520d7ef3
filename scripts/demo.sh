#!/usr/bin/env bash
# The main job, on one machine: installs what is missing, builds zshard, and trains a model across
# 4 ranks at ZeRO stage 3 on the CPU under mpirun, printing the loss as it falls and each rank's
# memory by category.
#
# When the GPT-2 example is there (scripts/demo-gpt2.sh and examples/train_gpt2.c, and it builds),
# this runs scripts/demo-gpt2.sh; otherwise, or with --mlp, it trains examples/mlp.c.
#
# Usage: scripts/demo.sh [--mlp] [-- extra flags for the trainer]
# Environment: BUILD_DIR (default build), NP (ranks, default 4), STEPS (MLP steps, default 30),
#              SKIP_DEPS=1 (do not call scripts/install-deps.sh).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

force_mlp=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mlp) force_mlp=1 ;;
    --)
      shift
      extra=("$@")
      break
      ;;
    -h | --help)
      sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "demo.sh: unknown option '$1' (see --help)" >&2
      exit 2
      ;;
  esac
  shift
done

build_dir=${BUILD_DIR:-build}
np=${NP:-4}
steps=${STEPS:-30}
jobs=$(nproc 2>/dev/null || echo 2)

# mpirun as root (containers), shared memory without CMA, more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1

if [ "${SKIP_DEPS:-0}" != 1 ]; then
  scripts/install-deps.sh
fi

echo "== configure + build $build_dir"
cmake -S . -B "$build_dir" -DZS_CUDA=AUTO >/dev/null

if [ "$force_mlp" = 0 ] && [ -x scripts/demo-gpt2.sh ] && [ -f examples/train_gpt2.c ]; then
  if cmake --build "$build_dir" -j "$jobs" --target train_gpt2; then
    echo "== GPT-2 demo (scripts/demo-gpt2.sh; scripts/demo.sh --mlp for the MLP)"
    BUILD=$(cd "$build_dir" && pwd) exec scripts/demo-gpt2.sh "${extra[@]}"
  fi
  echo "demo.sh: the GPT-2 example does not build yet: training the MLP instead" >&2
fi

cmake --build "$build_dir" -j "$jobs" --target mlp
echo "== training examples/mlp.c: $np ranks, ZeRO stage 3, CPU, $steps steps"
mpirun --oversubscribe -np "$np" "$build_dir/examples/mlp" --device cpu --stage 3 \
  --steps "$steps" "${extra[@]}"
