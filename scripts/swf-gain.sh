#!/usr/bin/env bash
# The README's table of what node sharing gains over exclusive EASY on a real
# trace: wait time, bounded slowdown, utilization, and what interference
# costs (the co-location slowdowns of the jobs that shared a node).
#
#   scripts/swf-gain.sh                  # the NASA iPSC/860 log
#   TRACE=my.swf.gz CLUSTERS="64x8" COMPRESS=1 SEEDS="1 2" scripts/swf-gain.sh
#
# CLUSTERS lists NODESxCORES shapes (the NASA machine's 128 one-processor
# nodes read as 32 x 4 and 16 x 8, so that small jobs can share a node);
# COMPRESS lists load factors (inter-arrival times divided by F: 1 is the
# log as recorded, 2 twice its load); SEEDS are mappings of the trace's
# executables onto the measured programs (--map exe). Each combination's
# report (CDF plots, Batsim jobs.csv, SWF, summary.json) goes to
# OUT/NODESxCORES-cF-seedS/; the table gives, per shape, load and policy,
# the median over the seeds and [min, max].
# Run time: virtual time only, deterministic; about 0.1 s per schedule for
# the 18,066 jobs kept of the NASA log, so the default 2 x 2 x 5
# combinations of 4 schedules take about 10 s (plus a build if the binary
# is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
COSCHED=${COSCHED:-./target/release/cosched}
TRACE=${TRACE:-examples/traces/NASA-iPSC-1993-3.1-cln.swf.gz}
CLUSTERS=${CLUSTERS:-"32x4 16x8"}
COMPRESS=${COMPRESS:-"1 2"}
SEEDS=${SEEDS:-"1 2 3 4 5"}
OUT=${OUT:-out/swf-gain}
SLOWDOWNS=${SLOWDOWNS:-examples/scenarios/few-bad.toml}
POLICIES=${POLICIES:-"noplan conflict-aware:threshold=50 no-twins"}
[ -x "$COSCHED" ] || cargo build --release -p cosched
args=()
for p in $POLICIES; do args+=(--policy "$p"); done
mkdir -p "$OUT"
for shape in $CLUSTERS; do
    for c in $COMPRESS; do
        for seed in $SEEDS; do
            dir="$OUT/$shape-c$c-seed$seed"
            "$COSCHED" simulate --swf "$TRACE" --nodes "${shape%x*}" --cores "${shape#*x}" --compress "$c" \
                --map exe --seed "$seed" --slowdowns "$SLOWDOWNS" "${args[@]}" --report "$dir" --json 2>/dev/null >/dev/null
            echo "$dir/summary.json"
        done
    done
done > "$OUT/runs.txt"
python3 - "$OUT/runs.txt" "$TRACE" <<'PY'
import json, statistics, sys
from collections import defaultdict
runs = [json.load(open(p.strip())) for p in open(sys.argv[1]) if p.strip()]
rows = defaultdict(lambda: defaultdict(list))
base = {}
for d in runs:
    key = (f"{d['nodes']} x {d['cores']}", d["compress"])
    b = d["outcomes"][0]["figures"]
    base.setdefault(key, []).append(b)
    for o in d["outcomes"][1:]:
        f = o["figures"]
        r = rows[key + (o["label"].split(" + ", 1)[1],)]
        r["wait"].append(100 * (f["wait"]["mean"] / b["wait"]["mean"] - 1))
        r["bsld"].append(100 * (f["bsld"]["mean"] / b["bsld"]["mean"] - 1))
        r["util"].append(100 * (f["utilization"] - b["utilization"]))
        r["shared"].append(100 * f["shared_jobs"] / f["jobs"])
        s = f["shared_slowdown"] or {"median": 1, "p90": 1, "max": 1}
        r["med"].append(s["median"]); r["p90"].append(s["p90"]); r["max"].append(s["max"])
def m(v, fmt):
    return f"{fmt.format(statistics.median(v))} [{fmt.format(min(v))}, {fmt.format(max(v))}]"
print(f"{sys.argv[2]}, {len(runs)} runs; median over the seeds [min, max]; changes against exclusive EASY on the same shape and load\n")
print("| nodes x cores | load | exclusive EASY: mean wait s / bounded slowdown / utilization | sharing policy | mean wait | mean bounded slowdown | utilization, points | jobs that shared | co-location slowdown of those: median / p90 / max |")
print("|---|---|---|---|---|---|---|---|---|")
for key, r in rows.items():
    bs = base[(key[0], key[1])]
    b = f"{statistics.median(x['wait']['mean'] for x in bs):.0f} / {statistics.median(x['bsld']['mean'] for x in bs):.2f} / {100*statistics.median(x['utilization'] for x in bs):.1f} %"
    print(f"| {key[0]} | x{key[1]:g} | {b} | {key[2]} | {m(r['wait'], '{:+.1f} %')} | {m(r['bsld'], '{:+.1f} %')} | {m(r['util'], '{:+.1f}')} | {m(r['shared'], '{:.0f} %')} | {statistics.median(r['med']):.3f} / {statistics.median(r['p90']):.3f} / {statistics.median(r['max']):.2f} |")
PY
