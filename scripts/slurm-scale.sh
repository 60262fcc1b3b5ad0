#!/usr/bin/env bash
# What one round of `cosched slurm serve` costs the Slurm controller, and
# whether that grows with the queue (issue 37): a benchmark, not a test.
#
# It starts a local cluster of 32 slurmd (scripts/slurm-local.sh), queues
# held jobs in the cosched partition and as many in another partition, and
# runs `serve --dry-run --rounds R` (it reads the cluster and decides each
# round, releasing nothing, so the queue stays as long). Before and after,
# `sdiag` gives the controller's RPC counts by type: all of them in the
# run come from serve (nothing else talks to this controller meanwhile but
# the slurmd, whose messages are not client requests). It prints, with 100
# then 1,000 queued jobs in each partition: RPCs per round by type, round
# wall time p50 and p99, and the ratio of the two RPC counts.
#
#   scripts/slurm-scale.sh                 # 32 nodes, 100 then 1,000 jobs, 50 rounds each
#   NODES=8 SMALL=50 LARGE=500 ROUNDS=20 scripts/slurm-scale.sh
#
# Aim (issue 37): RPCs per round within 1.2x between the two queues, p99
# round below 1 s. Needs root (slurmd), munge and Slurm; takes a few
# minutes (submitting 2,000 jobs with sbatch dominates). Exit 1 if an aim
# is missed, 2 if the cluster cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-32}
SMALL=${SMALL:-100}
LARGE=${LARGE:-1000}
ROUNDS=${ROUNDS:-50}
export COSCHED_SLURM_DIR=${COSCHED_SLURM_DIR:-/tmp/cosched-slurm-scale-$(id -u)}
export COSCHED_SLURM_PORT=${COSCHED_SLURM_PORT:-18817}
export COSCHED_SLURM_NODES=$NODES
# The epilog hook is not what is measured: no job ends here.
export COSCHED_SLURM_HOOK_AT=none
BIN=${COSCHED_BIN:-target/release/cosched}
[ -x "$BIN" ] || { echo "slurm-scale: $BIN not built (cargo build --release -p cosched)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "slurm-scale: slurmd must run as root" >&2; exit 2; }
command -v python3 >/dev/null || { echo "slurm-scale: needs python3 for the figures" >&2; exit 2; }

WORK=$(mktemp -d)
trap 'scripts/slurm-local.sh stop >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
scripts/slurm-local.sh start
export SLURM_CONF=$COSCHED_SLURM_DIR/etc/slurm.conf
printf '#!/bin/sh\n#COSCHED program=triad\ntrue\n' >"$WORK/job.sh"

# Queues jobs until each partition holds $1: cosched's are held by the
# submission rule, the other partition's by -H (so neither queue drains).
fill() {
    local want=$1 have
    have=$(squeue -h -p cosched -o %i | wc -l)
    for _ in $(seq $((want - have))); do
        sbatch -p cosched -o /dev/null "$WORK/job.sh" >/dev/null
        sbatch -p other -H -o /dev/null "$WORK/job.sh" >/dev/null
    done
}

# Client RPCs the controller served since the last `sdiag -r`, by type
# (sdiag's own and the reset excluded), as `TYPE COUNT AVE_US` lines.
rpcs() {
    sdiag | sed -n '/by message type/,/by user/p' | awk '/count:/ {
        c=$0; sub(/.*count:/, "", c); sub(/ .*/, "", c)
        a=$0; sub(/.*ave_time:/, "", a); sub(/ .*/, "", a)
        if ($1 != "REQUEST_STATS_INFO") print $1, c, a }'
}

measure() {
    local jobs=$1
    fill "$jobs"
    sdiag -r >/dev/null
    "$BIN" slurm serve --db "$WORK/scale.db" --mark-key "$WORK/key" --policy noplan --dry-run --rounds "$ROUNDS" \
        --interval 0.05 --json >"$WORK/serve-$jobs.json" 2>"$WORK/serve-$jobs.err"
    rpcs >"$WORK/rpc-$jobs.txt"
}

measure "$SMALL"
measure "$LARGE"

python3 - "$WORK" "$SMALL" "$LARGE" "$ROUNDS" "$NODES" <<'EOF'
import json, sys
work, small, large, rounds, nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]
rows, per = [], {}
for n in (small, large):
    r = json.load(open(f"{work}/serve-{n}.json"))
    lines = [l.split() for l in open(f"{work}/rpc-{n}.txt") if l.strip()]
    kinds = {k: c for k, c, _ in lines}
    # What the controller spends on the one queue reading: 22.05's job
    # table request carries no partition, so this grows with every job it
    # knows, whichever partition (squeue drops the others client-side).
    job_us = next((int(a) for k, _, a in lines if k == "REQUEST_JOB_INFO"), 0)
    # The startup check's one `scontrol ping` is not a round's.
    total = sum(int(c) for k, c in kinds.items() if k != "REQUEST_PING")
    per[n] = total / r["rounds"]
    t = r["round_s"]
    by = ", ".join(f"{k} {int(c) / r['rounds']:.1f}" for k, c in sorted(kinds.items()) if k != "REQUEST_PING")
    rows.append((n, r["rounds"], per[n], pct(t, 50), pct(t, 99), by, job_us))
print(f"{nodes} nodes; jobs queued in the cosched partition and as many in `other`; serve --dry-run, {rounds} rounds")
print(f"{'queued':>7} {'rounds':>6} {'RPCs/round':>10} {'p50 s':>7} {'p99 s':>7} {'JOB_INFO ms':>11}  by type (per round)")
for n, k, rpc, p50, p99, by, job_us in rows:
    print(f"{n:>7} {k:>6} {rpc:>10.2f} {p50:>7.3f} {p99:>7.3f} {job_us / 1000:>11.1f}  {by}")
ratio = per[large] / per[small]
p99 = max(r[4] for r in rows)
print(f"RPC ratio {large} vs {small}: {ratio:.2f} (aim <= 1.2); worst p99 round {p99:.3f} s (aim < 1 s)")
sys.exit(0 if ratio <= 1.2 and p99 < 1.0 else 1)
EOF
