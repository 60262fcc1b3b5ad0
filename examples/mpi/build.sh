#!/bin/sh
# Builds the MPI communication job into DIR (default examples/mpi/bin) with
# Open MPI's compiler wrapper (Debian: openmpi-bin, libopenmpi-dev).
#
#   examples/mpi/build.sh [DIR]
set -eu
here=$(dirname "$0")
dir=${1:-$here/bin}
if ! command -v mpicc >/dev/null 2>&1; then
    echo "examples/mpi/build.sh: mpicc not found; install openmpi-bin and libopenmpi-dev (./install.sh does)" >&2
    exit 2
fi
mkdir -p "$dir"
mpicc -O2 -o "$dir/comm" "$here/comm.c"
echo "built: $dir/comm"
