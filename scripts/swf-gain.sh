#!/usr/bin/env bash
# The README's table of what node sharing gains over exclusive EASY on a real
# trace: wait time, bounded slowdown, utilization, makespan, and what
# interference costs (the co-location slowdowns of jobs that shared a node).
#
#   scripts/swf-gain.sh                  # the NASA iPSC/860 log
#   TRACE=my.swf.gz CLUSTERS="64x8" COMPRESS=1 scripts/swf-gain.sh
#   OUT=out/gain SEEDS="1 2 3" scripts/swf-gain.sh
#
# CLUSTERS lists NODESxCORES shapes (the NASA machine's 128 one-processor
# nodes read as 32 x 4 and 16 x 8, so that small jobs can share a node);
# COMPRESS lists load factors (inter-arrival times divided by F: 1 is the
# log as recorded, 2 twice its load). Each seed maps the trace's
# executables onto the measured programs differently (--map exe). Every
# combination prints its tables, and its report directory (CDF plots,
# Batsim jobs.csv, SWF) is OUT/NODESxCORES-cF-seedS.
# Run time: virtual time only, deterministic; about 0.1 s per schedule for
# the 18,066 jobs kept of the NASA log, so the default 4 combinations x 4
# schedules take a few seconds (plus a build if the binary is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
COSCHED=${COSCHED:-./target/release/cosched}
TRACE=${TRACE:-examples/traces/NASA-iPSC-1993-3.1-cln.swf.gz}
CLUSTERS=${CLUSTERS:-"32x4 16x8"}
COMPRESS=${COMPRESS:-"1 2"}
SEEDS=${SEEDS:-1}
OUT=${OUT:-out/swf-gain}
SLOWDOWNS=${SLOWDOWNS:-examples/scenarios/few-bad.toml}
POLICIES=${POLICIES:-"noplan conflict-aware:threshold=50 no-twins"}
[ -x "$COSCHED" ] || cargo build --release -p cosched
args=()
for p in $POLICIES; do args+=(--policy "$p"); done
for shape in $CLUSTERS; do
    nodes=${shape%x*}
    cores=${shape#*x}
    for c in $COMPRESS; do
        for seed in $SEEDS; do
            echo "## $TRACE on $nodes nodes x $cores cores, inter-arrival times / $c, programs by executable (seed $seed)"
            echo
            "$COSCHED" simulate --swf "$TRACE" --nodes "$nodes" --cores "$cores" --compress "$c" --map exe --seed "$seed" \
                --slowdowns "$SLOWDOWNS" "${args[@]}" --report "$OUT/$shape-c$c-seed$seed" 2>/dev/null
            echo
        done
    done
done
