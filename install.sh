#!/usr/bin/env bash
# Installs cosched on Debian 12: system packages, an optimized build, and the
# `cosched` and `cosched-kernel` binaries in $PREFIX/bin.
#
#   ./install.sh              # packages + build + install (PREFIX=/usr/local as root, ~/.local otherwise)
#   ./install.sh --deps-only  # only the Debian packages (what CI needs before the tests)
#   PREFIX=/opt/cosched ./install.sh
set -euo pipefail
cd "$(dirname "$0")"

# cc builds the reference C STREAM of `cosched bench kernels`; hwloc gives
# `cosched node` its topology (sysfs is the fallback); stress-ng, hpcc,
# sysbench and fio are the third-party workloads of the examples; linux-perf is the `perf stat`
# fallback for counting system calls (cosched opens the tracepoint itself
# when it may).
# man-db and bash-completion read the man pages and completions installed below.
# slurm-wlm (slurmctld, slurmd, their plugins incl. job_submit/lua), slurm-client
# and munge run the local Slurm cluster of `scripts/slurm-local.sh` and the
# `cosched slurm` tests. openmpi-bin and libopenmpi-dev build and launch the MPI
# communication job of examples/mpi (`mpirun` as a cosched job). valgrind's
# cachegrind gives `cosched profile --miss-curve` its miss-ratio curves.
PACKAGES=(build-essential pkg-config git hwloc stress-ng hpcc sysbench fio linux-perf man-db bash-completion slurm-wlm slurm-client munge openmpi-bin libopenmpi-dev valgrind)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "install.sh: need root (or sudo) to run: $*" >&2; exit 1; fi
}

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "==> apt-get install ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ "${1:-}" = "--deps-only" ] && exit 0

if ! command -v cargo >/dev/null; then
    # Debian 12's packaged Rust (1.63) is older than our dependencies need.
    echo "install.sh: cargo not found. Install Rust >= 1.88 with rustup (https://rustup.rs), then rerun." >&2
    exit 1
fi

# The dist profile (Cargo.toml says why): one codegen unit, whole-program LTO.
echo "==> cargo build --profile dist"
cargo build --profile dist --workspace --locked

if [ -z "${PREFIX:-}" ]; then
    if [ "$(id -u)" -eq 0 ]; then PREFIX=/usr/local; else PREFIX="$HOME/.local"; fi
fi
mkdir -p "$PREFIX/bin"
install -m 0755 target/dist/cosched target/dist/cosched-kernel "$PREFIX/bin/"
echo "==> installed cosched and cosched-kernel in $PREFIX/bin"

# Man pages (`man cosched-run`) and bash, zsh and fish completion, generated
# from the binary's own argument definitions. Under sudo, cosched writes the
# paths it is given as the invoking user; installing into $PREFIX is root's
# own act, so the generator runs without SUDO_UID.
mandir="$PREFIX/share/man/man1"
bashdir="$PREFIX/share/bash-completion/completions"
zshdir="$PREFIX/share/zsh/site-functions"
fishdir="$PREFIX/share/fish/vendor_completions.d"
mkdir -p "$mandir" "$bashdir" "$zshdir" "$fishdir"
gen() { env -u SUDO_UID -u SUDO_GID "$PREFIX/bin/cosched" generate "$@"; }
gen man --out "$mandir"
gen completions bash > "$bashdir/cosched"
gen completions zsh > "$zshdir/_cosched"
gen completions fish > "$fishdir/cosched.fish"
if [ "$(id -u)" -eq 0 ] && command -v mandb >/dev/null; then mandb -q "$mandir/.." 2>/dev/null || true; fi
echo "==> installed man pages in $mandir (man cosched, man cosched-run, ...)"
echo "    and completions for bash ($bashdir), zsh ($zshdir) and fish ($fishdir)"
case ":$PATH:" in
    *":$PREFIX/bin:"*) ;;
    *) echo "    add it to your PATH: export PATH=\"$PREFIX/bin:\$PATH\"" ;;
esac
