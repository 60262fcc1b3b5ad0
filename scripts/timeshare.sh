#!/bin/sh
# The nOS-V paper's comparison on this node: pairs (and three-wise combinations)
# of multi-threaded programs, each on every core of the node, under
# exclusive, oversubscription (overbook:pin=off: all jobs on all cores, the
# OS shares), static co-location (colocate: the cores split once) and
# timeshare (turns of 20 ms, freeze/thaw). Per combination the median
# makespan over the repeats gives each strategy's performance score,
# min over strategies of makespan / its own (the nOS-V paper); printed per
# combination and as box-plot figures (min, q1, median, q3, max) and
# medians per strategy, pairs and triples apart.
#
#   scripts/timeshare.sh [OUT_DIR]          # the bar: ~45 min on a quiet 2-core node (14 combinations of 6 s jobs)
#   TINY=1 scripts/timeshare.sh /tmp/ts     # a check that it runs: ~2 min
#   COMBOS="stream+compute jacobi+mandel" scripts/timeshare.sh OUT   # some of them
#   QUANTUM=0.1 scripts/timeshare.sh OUT    # timeshare's turn (default 0.02 s, the nOS-V paper's)
#   ANALYZE_ONLY=1 COMBOS="..." scripts/timeshare.sh OUT   # tables and scores.svg again
#
# Run it on a quiet node. Needs python3 for the scores.
set -eu
out="${1:-timeshare-out}"
# This checkout's build first: an older cosched installed on PATH may lack verbs.
cosched="${COSCHED:-$(dirname "$0")/../target/release/cosched}"
[ -x "$cosched" ] || cosched=cosched
mkdir -p "$out"
# The node's cache regime before each step, logged to $out/regimes.log.
OUT="$out" COSCHED="$cosched"
export OUT COSCHED
. "$(dirname "$0")/common.sh"
db="${COSCHED_DB:-$out/cosched.db}"
cores=$(nproc)
if [ "${TINY:-0}" = 1 ]; then seconds=0.5; repeats=1; else seconds=6; repeats=3; fi
# name:kernel:params (threads = the node's cores; one program per name).
programs="stream:stream:{ array_mib = 64 }
compute:compute:{}
dgemm:dgemm:{}
cache:cache:{}"
if command -v stress-ng >/dev/null 2>&1; then have_stress=1; else have_stress=0; fi
# Two OpenMP programs (examples/omp: a Jacobi solver with a barrier per
# sweep, a dynamically scheduled Mandelbrot), built here with the system's
# cc and libgomp, OMP_NUM_THREADS from the job's `env`.
if command -v cc >/dev/null 2>&1 && "$(dirname "$0")/../examples/omp/build.sh" "$out/omp" >/dev/null 2>&1; then
    have_omp=1
else
    have_omp=0
    echo "no C compiler with OpenMP (Debian: gcc): the OpenMP combinations are left out" >&2
fi
job() { # name kernel params suffix
    printf '[[jobs]]\nname = "%s%s"\nkernel = "%s"\nparams = %s\nthreads = %s\nseconds = %s\n' "$1" "$4" "$2" "$3" "$cores" "$seconds"
}
line() { printf '%s\n' "$programs" | grep "^$1:"; }
combos="stream+stream stream+compute compute+compute dgemm+stream cache+compute dgemm+dgemm stream+compute+dgemm cache+stream+dgemm"
[ "$have_stress" = 1 ] && combos="$combos stressng+stream stressng+compute"
[ "$have_omp" = 1 ] && combos="$combos jacobi+mandel jacobi+stream jacobi+jacobi mandel+compute"
# COMBOS="a+b c+d+e ..." runs only those (names as above).
[ -n "${COMBOS:-}" ] && combos=$COMBOS
if [ "${TINY:-0}" = 1 ]; then
    combos="stream+compute stream+compute+dgemm"
    [ "$have_stress" = 1 ] && combos="$combos stressng+stream"
    [ "$have_omp" = 1 ] && combos="$combos jacobi+mandel"
fi
# ANALYZE_ONLY=1: the tables and box plot again from OUT's results.
[ "${ANALYZE_ONLY:-0}" = 1 ] && combos_run="" || combos_run=$combos
for c in $combos_run; do
    w="$out/$c.toml"
    printf 'name = "ts-%s"\n[[pools]]\nname = "host"\ncores = %s\n' "$c" "$cores" > "$w"
    i=0
    for p in $(echo "$c" | tr '+' ' '); do
        i=$((i + 1))
        if [ "$p" = stressng ]; then
            # A third-party multi-threaded program: stress-ng's matrix
            # stressor, a fixed number of operations on every core.
            printf '[[jobs]]\nname = "stress-ng-%s"\ncommand = "stress-ng --matrix %s --matrix-ops %s --quiet"\ncores = %s\n' \
                "$i" "$cores" "$([ "${TINY:-0}" = 1 ] && echo 200 || echo 4000)" "$cores" >> "$w"
            continue
        fi
        if [ "$p" = jacobi ] || [ "$p" = mandel ]; then
            # Sized for about 6 s alone on the 2-core VM (TINY: under 1 s).
            if [ "$p" = jacobi ]; then a="2048 $([ "${TINY:-0}" = 1 ] && echo 60 || echo 720)"; else a="$([ "${TINY:-0}" = 1 ] && echo 600 || echo 2800) 2000"; fi
            printf '[[jobs]]\nname = "omp-%s-%s"\ncommand = "%s %s"\ncores = %s\nenv = { OMP_NUM_THREADS = "%s" }\n' \
                "$p" "$i" "$(cd "$out/omp" && pwd)/$p" "$a" "$cores" "$cores" >> "$w"
            continue
        fi
        l=$(line "$p")
        k=$(echo "$l" | cut -d: -f2)
        prm=$(echo "$l" | cut -d: -f3-)
        job "$p" "$k" "$prm" "-$i" >> "$w"
    done
    regime "timeshare $c"
    "$cosched" run --workload "$w" --db "$db" --policy "timeshare:quantum=${QUANTUM:-0.02}" --baseline exclusive --baseline overbook:pin=off \
        --baseline colocate --repeats "$repeats" --solo stored --json > "$out/$c.json"
    echo "ran $c"
done
python3 - "$out" $combos <<'EOF'
import json, statistics, sys
out, combos = sys.argv[1], sys.argv[2:]
names = {"timeshare": "timeshare", "exclusive": "exclusive", "overbook": "oversubscription", "colocate": "static co-location"}
def strategy(label):
    return names.get(label.split(":")[0], label)
scores = {}
print("| combination | " + " | ".join(names.values()) + " |")
print("|---|" + "---|" * len(names))
for c in combos:
    doc = json.load(open(f"{out}/{c}.json"))
    spans = {}
    for r in doc["runs"]:
        m = r.get("metrics")
        if m and r["run"]["policy"] != "solo-pass":
            spans.setdefault(strategy(r["run"]["policy"]), []).append(m["makespan"])
    med = {k: statistics.median(v) for k, v in spans.items()}
    best = min(med.values())
    row = []
    for s in names.values():
        sc = best / med[s] if s in med else float("nan")
        kind = "pairs" if c.count("+") == 1 else "triples"
        scores.setdefault((kind, s), []).append(sc)
        row.append(f"{sc:.2f} ({med.get(s, float('nan')):.2f} s)")
    print(f"| {c} | " + " | ".join(row) + " |")
print()
print("| set | strategy | min | q1 | median | q3 | max | n |")
print("|---|---|---|---|---|---|---|---|")
for (kind, s), v in sorted(scores.items()):
    v = sorted(x for x in v if x == x)
    if not v:
        continue
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    print(f"| {kind} | {s} | {v[0]:.2f} | {q[0]:.2f} | {q[1]:.2f} | {q[2]:.2f} | {v[-1]:.2f} | {len(v)} |")
worst = {s: min(x for (k, t), v in scores.items() if t == s for x in v) for s in names.values()}
print()
print(f"worst pair or triple: timeshare {worst['timeshare']:.2f}, oversubscription {worst['oversubscription']:.2f} "
      f"(bar: timeshare's worst no worse than oversubscription's)")

# The box plot of the nOS-V paper's figure: each strategy's scores over every
# combination (pairs and triples together), whiskers at min and max.
strategies = list(names.values())
W, H, left, top, bottom = 560, 300, 60, 30, 50
def y(v):  # score 0..1 upwards
    return top + (1 - v) * (H - top - bottom)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<text x="{W / 2}" y="18" text-anchor="middle">performance score per strategy ({len(combos)} combinations; 1 = best of the four)</text>']
for t in [0, 0.25, 0.5, 0.75, 1.0]:
    svg.append(f'<line x1="{left}" x2="{W - 10}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
               f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>')
step = (W - left - 10) / len(strategies)
for i, s in enumerate(strategies):
    v = sorted(x for (k, t), xs in scores.items() if t == s for x in xs if x == x)
    if not v:
        continue
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    cx = left + step * (i + 0.5)
    svg.append(f'<line x1="{cx}" x2="{cx}" y1="{y(v[-1]):.1f}" y2="{y(v[0]):.1f}" stroke="black"/>')
    svg.append(f'<rect x="{cx - 25}" y="{y(q[2]):.1f}" width="50" height="{max(y(q[0]) - y(q[2]), 1):.1f}" fill="#9ecae1" stroke="black"/>')
    svg.append(f'<line x1="{cx - 25}" x2="{cx + 25}" y1="{y(q[1]):.1f}" y2="{y(q[1]):.1f}" stroke="black" stroke-width="2"/>')
    svg.append(f'<text x="{cx}" y="{H - bottom + 18}" text-anchor="middle">{s}</text>'
               f'<text x="{cx}" y="{H - bottom + 34}" text-anchor="middle">median {q[1]:.2f}</text>')
svg.append('</svg>')
open(f"{out}/scores.svg", "w").write("\n".join(svg) + "\n")
print(f"box plot: {out}/scores.svg")
EOF
