#!/usr/bin/env bash
# The Debian 12 packages examples/apps/apps.toml runs (as root or via sudo).
# Not part of ./install.sh: cosched does not need them, only this workload.
set -euo pipefail
PACKAGES=(lammps stockfish gnugo ffmpeg python3-numpy primesieve sysbench xz-utils zstd bzip2 gzip openssl sqlite3 bc coreutils fio mbw)
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
echo "installed: ${PACKAGES[*]}"
