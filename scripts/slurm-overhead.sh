#!/usr/bin/env bash
# Issue 15's bar: the mixed workload through Slurm against `cosched run` on
# the same node, REPEATS times each, alternating; prints each makespan, the
# Slurm path's overhead (median of the per-repeat ratios - 1) and where the
# Slurm path's latency goes (scripts/slurm-budget.py). Run it on a quiet
# node, as root (slurmd), after `cosched calibrate --workload WORKLOAD`
# (and `cosched pairs` for conflict-aware to have measurements).
#
#   scripts/slurm-overhead.sh                       # examples/mixed.toml, conflict-aware, 3 repeats
#   REPEATS=1 WORKLOAD=examples/pair-stream.toml scripts/slurm-overhead.sh   # a tiny check
#   HOOK_AT=none INTERVAL=0.1 scripts/slurm-overhead.sh   # polling only, as before the epilog hook
#
# Both paths use the same policy, predictor and database. `cosched run
# --solo stored` runs no solo passes, so its makespan is the workload's
# alone. Through Slurm, jobs are submitted at their arrival times by
# `cosched slurm submit`, decided by `cosched slurm serve` (woken at each
# job's end by the cluster's epilog, `cosched slurm hook`, and polling
# every INTERVAL seconds for new submissions), and the makespan is first
# start to last end as time-stamped inside the jobs' batch scripts:
# Slurm's latency (release to start, an end to the next start) is in it.
# mixed.toml's jobs take about 2 s alone; the whole script takes about
# 1 min per repeat on a 2-core node.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKLOAD=${WORKLOAD:-examples/mixed.toml}
POLICY=${POLICY:-conflict-aware}
REPEATS=${REPEATS:-3}
INTERVAL=${INTERVAL:-0.5}
COSCHED=${COSCHED:-target/release/cosched}
export COSCHED_KERNEL=${COSCHED_KERNEL:-$(dirname "$COSCHED")/cosched-kernel}
export COSCHED_BIN=${COSCHED_BIN:-$(cd "$(dirname "$COSCHED")" && pwd)/$(basename "$COSCHED")}
export COSCHED_SLURM_HOOK_AT=${HOOK_AT:-slurmd}
WORK=$(mktemp -d)
export COSCHED_SLURM_DIR=$WORK/slurm
export COSCHED_DB=${COSCHED_DB:-$HOME/.local/share/cosched/cosched.db}

# KEEP=1 keeps the jobs' output, serve's JSON and Slurm's logs in $WORK.
cleanup() {
    if [ -n "${KEEP:-}" ]; then
        cp -a "$COSCHED_SLURM_DIR/log" "$WORK/slurm-log" 2>/dev/null || true
        echo "kept in $WORK"
    fi
    scripts/slurm-local.sh stop >/dev/null 2>&1 || true
    [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
scripts/slurm-local.sh start
eval "$(scripts/slurm-local.sh env)"
[ "$COSCHED_SLURM_HOOK_AT" = none ] && unset COSCHED_SLURM_HOOK

ratios=()
for r in $(seq "$REPEATS"); do
    direct=$("$COSCHED" run --workload "$WORKLOAD" --policy "$POLICY" --solo stored --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["runs"][-1]["metrics"]["makespan"])')
    dir=$WORK/jobs-$r
    "$COSCHED" slurm serve --workload "$WORKLOAD" --policy "$POLICY" --interval "$INTERVAL" --exit-idle 2 --json \
        >"$WORK/serve-$r.json" 2>"$WORK/serve-$r.log" &
    serve=$!
    "$COSCHED" slurm submit --workload "$WORKLOAD" --dir "$dir" --json >"$WORK/submit-$r.json"
    wait "$serve"
    slurm=$(cat "$dir"/*.out | awk '/^cosched-start/ { if (s == "" || $2 < s) s = $2 } /^cosched-end/ { if ($2 > e) e = $2 } END { printf "%.3f", e - s }')
    ratio=$(python3 -c "print(f'{$slurm / $direct:.4f}')")
    ratios+=("$ratio")
    echo "repeat $r: cosched run makespan ${direct} s, through Slurm ${slurm} s, ratio ${ratio}"
done
python3 - "${ratios[@]}" <<'EOF'
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print(f"Slurm path makespan overhead: median {100 * (statistics.median(r) - 1):+.1f} % "
      f"(min {100 * (min(r) - 1):+.1f} %, max {100 * (max(r) - 1):+.1f} %, n = {len(r)}); bar: below +10 %")
EOF
echo "hook: ${COSCHED_SLURM_HOOK_AT}, poll interval ${INTERVAL} s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 scripts/slurm-budget.py "$WORK" "$REPEATS"
