#!/usr/bin/env bash
# Issue 15's bar: the mixed workload through Slurm against `cosched run` on
# the same node, REPEATS times each, alternating; prints each makespan and
# the Slurm path's overhead (median of the per-repeat ratios - 1). Run it
# on a quiet node, as root (slurmd), after `cosched calibrate --workload
# WORKLOAD` (and `cosched pairs` for conflict-aware to have measurements).
#
#   scripts/slurm-overhead.sh                       # examples/mixed.toml, conflict-aware, 3 repeats
#   REPEATS=1 WORKLOAD=examples/pair-stream.toml scripts/slurm-overhead.sh   # a tiny check
#
# Both paths use the same policy, predictor and database. `cosched run
# --solo stored` runs no solo passes, so its makespan is the workload's
# alone. Through Slurm, jobs are submitted at their arrival times by
# `cosched slurm submit`, decided by `cosched slurm serve`, and the
# makespan is first start to last end as time-stamped inside the jobs'
# batch scripts: Slurm's latency (submission, release to start, end to the
# next start) is in it. mixed.toml's jobs take about 2 s alone; the whole
# script takes about 1 min per repeat on a 2-core node.
set -euo pipefail
cd "$(dirname "$0")/.."

WORKLOAD=${WORKLOAD:-examples/mixed.toml}
POLICY=${POLICY:-conflict-aware}
REPEATS=${REPEATS:-3}
COSCHED=${COSCHED:-target/release/cosched}
export COSCHED_KERNEL=${COSCHED_KERNEL:-$(dirname "$COSCHED")/cosched-kernel}
WORK=$(mktemp -d)
export COSCHED_SLURM_DIR=$WORK/slurm
export COSCHED_DB=${COSCHED_DB:-$HOME/.local/share/cosched/cosched.db}

cleanup() { scripts/slurm-local.sh stop >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
scripts/slurm-local.sh start
eval "$(scripts/slurm-local.sh env)"

ratios=()
for r in $(seq "$REPEATS"); do
    direct=$("$COSCHED" run --workload "$WORKLOAD" --policy "$POLICY" --solo stored --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["runs"][-1]["metrics"]["makespan"])')
    dir=$WORK/jobs-$r
    "$COSCHED" slurm serve --workload "$WORKLOAD" --policy "$POLICY" --interval 0.1 --exit-idle 2 >"$WORK/serve-$r.log" 2>&1 &
    serve=$!
    "$COSCHED" slurm submit --workload "$WORKLOAD" --dir "$dir" >/dev/null
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
