#!/usr/bin/env bash
# Every side-by-side experiment of docs/papers.md in one go, each into its
# own folder of OUT, so all of that page's cosched figures are regenerated
# by one command:
#
#   scripts/papers.sh OUT            # about 70 minutes on a quiet 2-core node
#   TINY=1 scripts/papers.sh OUT     # fewer repeats and triples: about 35 min, rough
#   ONLY="study sweep" scripts/papers.sh OUT    # some of them (names below)
#
# Experiments (names for ONLY), in the page's order:
#   twins      the Terrible Twins paper's Table 2: `cosched enumerate` counts
#              and twin groups (a matrix whose diagonal ranks the ten programs)
#   study      the nOS-V paper's co-execution study: examples/omp/study.toml,
#              seven programs, every pair and 35 triples (10 with TINY), all
#              strategies incl. dynamic co-location
#   sweep      the Xeon Phi study's OpenMP thread sweep beside a triad
#   c-all      the SX-Aurora paper's host-by-accelerator matrix and C_all
#              (scripts/c-all-matrix.sh)
#   veth       the inter-VM paper's guest-to-guest path (scripts/mpi-veth.sh;
#              needs root)
#   mpi        the Xeon Phi study's MPI interference ratios
#              (scripts/mpi-interference.sh)
#   miss       the DistGen paper's miss-ratio curves (`profile --miss-curve`)
#
# Resumable: a finished experiment leaves OUT/NAME.done and is skipped the
# next time (delete it to run it again), so the campaign fits in quiet
# windows. The cache regime at each start goes to OUT/regimes.log and the
# load average to OUT/load.log: a figure taken on a busy node says little
# (docs/papers.md marks such tables rough). OUT/index.md lists where each
# table is. Needs what ./install.sh installs (Open MPI, valgrind, stress-ng,
# sysbench, python3) and examples/omp/build.sh's compiler (gcc).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
cd "$repo"
[ $# -ge 1 ] || { echo "usage: scripts/papers.sh OUT  (see the header of $0)" >&2; exit 2; }
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
export OUT
COSCHED=${COSCHED:-$repo/target/release/cosched}
[ -x "$COSCHED" ] || { echo "papers.sh: no cosched binary at $COSCHED (run ./install.sh or set COSCHED)" >&2; exit 2; }
export COSCHED
# shellcheck source=scripts/common.sh
. "$here/common.sh"
TINY=${TINY:-0}
ALL="twins study sweep c-all veth mpi miss"
ONLY=${ONLY:-$ALL}
for name in $ONLY; do
    case " $ALL " in *" $name "*) ;; *) echo "papers.sh: unknown experiment '$name' in ONLY (known: $ALL)" >&2; exit 2 ;; esac
done
started=$(date +%s)

# run NAME FUNCTION: once per OUT unless NAME.done is removed; logs to
# OUT/NAME/log.txt and says where.
run() {
    local name=$1 fn=$2
    case " $ONLY " in *" $name "*) ;; *) return 0 ;; esac
    if [ -e "$OUT/$name.done" ]; then
        echo "== $name: done in an earlier run ($OUT/$name), skipped"
        return 0
    fi
    mkdir -p "$OUT/$name"
    regime "$name"
    echo "== $(date -u +%H:%M:%S) $name load: $(cat /proc/loadavg)" >> "$OUT/load.log"
    local t0
    t0=$(date +%s)
    if "$fn" "$OUT/$name" > "$OUT/$name/log.txt" 2>&1; then
        touch "$OUT/$name.done"
        echo "== $name: done in $(( $(date +%s) - t0 )) s, $OUT/$name/log.txt"
    else
        echo "== $name: FAILED after $(( $(date +%s) - t0 )) s; the last lines of $OUT/$name/log.txt:" >&2
        tail -n 15 "$OUT/$name/log.txt" >&2
        failed="$failed $name"
    fi
}
failed=""

twins() {
    # The groups depend only on how the diagonal ranks the programs (thirds
    # of 3, 4 and 3), so a matrix whose twin slowdowns rise with the index
    # gives the paper's grouping; its off-diagonal cells only shape the
    # histogram.
    python3 - "$1/matrix.csv" <<'PY'
import random, sys
rng = random.Random(7)
n = 10
with open(sys.argv[1], "w") as f:
    for i in range(n):
        f.write(",".join(f"{1.0 + 0.1 * (i + 1) if i == j else rng.uniform(1.0, 1.6):.2f}" for j in range(n)) + "\n")
PY
    "$COSCHED" enumerate --programs 10 --nodes 10
    "$COSCHED" enumerate --programs 10 --nodes 10 --matrix "$1/matrix.csv" --svg "$1/enumerate-10.svg"
}
study() {
    examples/omp/build.sh
    local triples=35
    [ "$TINY" = 1 ] && triples=10
    "$COSCHED" study --workload examples/omp/study.toml --repeats 1 --triples "$triples" \
        --report "$1/report" --db "$1/cosched.db"
}
sweep() {
    examples/omp/build.sh
    local repeats=5
    [ "$TINY" = 1 ] && repeats=2
    "$COSCHED" pairs --workload examples/omp/sweep.toml --threads 1,2 --repeats "$repeats" \
        --min-repeats "$repeats" --db "$1/cosched.db"
}
c_all() { TINY=$TINY "$here/c-all-matrix.sh" "$1"; }
veth() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "skipped: the veth experiment needs root (ip netns)"
        return 0
    fi
    if [ "$TINY" = 1 ]; then ITERS=50 "$here/mpi-veth.sh" "$1"; else "$here/mpi-veth.sh" "$1"; fi
}
mpi() { TINY=$TINY "$here/mpi-interference.sh" "$1"; }
miss() {
    "$COSCHED" profile --workload examples/miss-curves.toml --repeats 1 --syscalls proc \
        --miss-curve 256K,1M,4M,16M,64M --db "$1/cosched.db"
}

run twins twins
run study study
run sweep sweep
run c-all c_all
run veth veth
run mpi mpi
run miss miss

{
    echo "# docs/papers.md regenerated: $(date -u '+%Y-%m-%d %H:%M') UTC, $(( $(date +%s) - started )) s, TINY=$TINY"
    echo
    echo "cosched $("$COSCHED" --version 2>/dev/null | head -n 1), host $(hostname), load at the end: $(cat /proc/loadavg)"
    echo
    echo "| experiment | its table | done |"
    echo "|---|---|---|"
    for name in $ALL; do
        if [ -e "$OUT/$name.done" ]; then d=yes; else d=no; fi
        echo "| $name | $name/log.txt | $d |"
    done
    echo
    echo "Cache regime at each start: regimes.log; load: load.log."
} > "$OUT/index.md"
echo "== index: $OUT/index.md"
if [ -n "$failed" ]; then
    echo "papers.sh: failed:$failed (the others are done; run the same command again to retry them)" >&2
    exit 1
fi
