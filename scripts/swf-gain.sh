#!/usr/bin/env bash
# The README's table of what node sharing gains over exclusive EASY on a real
# trace: wait time, bounded slowdown, utilization, makespan, and what
# interference costs (the co-location slowdowns of jobs that shared a node).
#
#   scripts/swf-gain.sh                  # the NASA iPSC/860 log, 32 nodes x 4 cores
#   TRACE=my.swf.gz NODES=64 CORES=8 scripts/swf-gain.sh
#   OUT=out/gain SEEDS="1 2 3" scripts/swf-gain.sh
#
# Each seed maps the trace's executables onto the measured programs
# differently (--map exe); the table is printed per seed, and the report
# directory of each (CDF plots, Batsim jobs.csv, SWF) is OUT/seed-N.
# Run time: the simulations are virtual time, about a second per schedule
# for the 18,239-job NASA log (four schedules per seed).
set -euo pipefail
cd "$(dirname "$0")/.."
COSCHED=${COSCHED:-./target/release/cosched}
TRACE=${TRACE:-examples/traces/NASA-iPSC-1993-3.1-cln.swf.gz}
NODES=${NODES:-32}
CORES=${CORES:-4}
SEEDS=${SEEDS:-1}
OUT=${OUT:-out/swf-gain}
SLOWDOWNS=${SLOWDOWNS:-examples/scenarios/few-bad.toml}
POLICIES=${POLICIES:-"noplan conflict-aware:threshold=50 no-twins"}
[ -x "$COSCHED" ] || cargo build --release -p cosched
args=()
for p in $POLICIES; do args+=(--policy "$p"); done
for seed in $SEEDS; do
    echo "## $TRACE on $NODES nodes x $CORES cores, programs by executable (seed $seed), slowdowns $SLOWDOWNS"
    echo
    "$COSCHED" simulate --swf "$TRACE" --nodes "$NODES" --cores "$CORES" --map exe --seed "$seed" \
        --slowdowns "$SLOWDOWNS" "${args[@]}" --report "$OUT/seed-$seed"
    echo
done
