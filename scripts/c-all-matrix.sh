#!/bin/sh
# The SX-Aurora paper's host-by-accelerator matrix (its figures 8-10) on this
# node: examples/sx-aurora-matrix.toml's host jobs beside its accelerator jobs
# (offload duty cycles and paced syscall micro-benchmarks) on one shared host
# core. Profiles every job alone (its host load U), measures the pairs
# (`cosched pairs`), fits `c-all` (`cosched evaluate-predictors`), and prints
# each host-by-accelerator cell (both directions, as the paper's figures 8
# and 9) with C_all = U_host + U_acc and the Pearson correlation of C_all
# with slowdown beside the paper's 0.738.
#
#   scripts/c-all-matrix.sh [OUT_DIR]            # 16 cells, 3-6 repeats: ~15 min on a quiet node
#   TINY=1 scripts/c-all-matrix.sh /tmp/call     # 2 repeats a pair: ~6 min, rough
#   ANALYZE_ONLY=1 scripts/c-all-matrix.sh OUT   # the table again from OUT's JSON
#
# Run it on a quiet node: the load of other processes on the host core is
# host load the profile does not see. Needs python3 for the table.
set -eu
out="${1:-c-all-matrix-out}"
here=$(dirname "$0")
cosched="${COSCHED:-$here/../target/release/cosched}"
[ -x "$cosched" ] || cosched=cosched
workload="${WORKLOAD:-$here/../examples/sx-aurora-matrix.toml}"
mkdir -p "$out"
OUT="$out" COSCHED="$cosched"
export OUT COSCHED
. "$here/common.sh"
db="${COSCHED_DB:-$out/cosched.db}"
if [ "${TINY:-0}" = 1 ]; then reps="--repeats 2 --min-repeats 2"; preps=2; else reps="--repeats 6 --min-repeats 3"; preps=3; fi
if [ "${ANALYZE_ONLY:-0}" != 1 ]; then
    echo "== $(date -u +%H:%M:%S) load: $(cat /proc/loadavg)" | tee -a "$out/load.log"
    regime "before profile"
    "$cosched" profile --workload "$workload" --repeats "$preps" --syscalls proc --db "$db" --json > "$out/profile.json"
    regime "before pairs"
    # shellcheck disable=SC2086
    "$cosched" pairs --workload "$workload" $reps --db "$db" --svg "$out/pairs.svg" --json > "$out/pairs.json"
    regime "after pairs"
    echo "== $(date -u +%H:%M:%S) load: $(cat /proc/loadavg)" | tee -a "$out/load.log"
    "$cosched" evaluate-predictors --workload "$workload" --predictor c-all --folds in-sample --regime any \
        --no-store --db "$db" --json > "$out/c-all.json" ||
        echo "c-all fit skipped: evaluate-predictors needs every job probed (cosched probe --workload $workload)" | tee -a "$out/load.log"
fi
python3 - "$out" "$workload" <<'PY'
import json, sys, tomllib, math
out, workload = sys.argv[1], sys.argv[2]
w = tomllib.load(open(workload, "rb"))
pool_kind = {p["name"]: p.get("kind", "cpu") for p in w["pools"]}
acc = {j["name"] for j in w["jobs"] if pool_kind[j["pool"]] != "cpu"}
prof = json.load(open(f"{out}/profile.json"))
u = {p["job"]: p["summary"]["summary"]["host_load_mean"] for p in prof}
m = json.load(open(f"{out}/pairs.json"))
# The matrix is flattened into the report (jobs, cells) in --json.
m = m.get("matrix", m)
jobs = m["jobs"]
rows = []
for i, a in enumerate(jobs):
    for j, b in enumerate(jobs):
        cell = m["cells"][i][j]
        # A host job beside an accelerator job, either way round: the
        # paper's figure 8 (host victim) and figure 9 (accelerator victim).
        if cell is None or (a in acc) == (b in acc):
            continue
        rows.append((a, b, (u[a] + u[b]) * 100, cell["median"], cell["n"]))
def pearson(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")
print(f"{'victim':<18} {'beside':<18} {'C_all %':>8} {'slowdown':>9} {'n':>3}")
for a, b, c, s, n in sorted(rows, key=lambda r: r[2]):
    print(f"{a:<18} {b:<18} {c:8.1f} {s:9.3f} {n:3d}")
print()
print("host load U alone (share of the host pool's cores):", ", ".join(f"{k} {v*100:.1f} %" for k, v in u.items()))
r = pearson([r[2] for r in rows], [r[3] for r in rows])
host = [x for x in rows if x[0] not in acc]
print(f"Pearson(C_all, slowdown) over {len(rows)} host-by-accelerator cells: {r:.3f}  (the SX-Aurora paper: 0.738)")
if len(host) > 2:
    print(f"  host victims only (the paper's figure 8): {pearson([x[2] for x in host], [x[3] for x in host]):.3f} over {len(host)} cells")
try:
    ev = json.load(open(f"{out}/c-all.json"))
    print("c-all fitted (evaluate-predictors, in-sample): ", end="")
    def find(o):
        if isinstance(o, dict):
            if o.get("predictor") == "c-all" and "pearson" in o:
                return o
            for v in o.values():
                f = find(v)
                if f: return f
        if isinstance(o, list):
            for v in o:
                f = find(v)
                if f: return f
    row = find(ev)
    if row:
        print(f"Pearson {row['pearson']:.3f}, MAE {row.get('mae', float('nan')):.3f} over {row.get('pairs', '?')} ordered pairs (every pair, isotonic fit)")
    else:
        print("(no c-all row in its output)")
except (OSError, ValueError) as e:
    print(f"c-all fit not read: {e}")
PY
