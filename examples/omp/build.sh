#!/bin/sh
# Builds the two OpenMP example programs into DIR (default examples/omp/bin)
# with the system's C compiler and libgomp (Debian: gcc).
#
#   examples/omp/build.sh [DIR]
set -eu
here=$(dirname "$0")
dir=${1:-$here/bin}
mkdir -p "$dir"
for p in jacobi mandel; do
    cc -O2 -fopenmp -o "$dir/$p" "$here/$p.c"
done
echo "built: $dir/jacobi $dir/mandel"
