#!/usr/bin/env bash
# Issue 17's figure: the makespan of the VarySched paper's four strategies
# (examples/lua/{short-term,long-term,banking,constraint}.lua) under both
# governor levels on a variant workload (jobs as kernel collections: each
# may run on all cores, on one core or on the accelerator), in simulation
# and on this node.
#
#   scripts/lua-strategies.sh                        # both; on a quiet node
#   SIM_ONLY=1 scripts/lua-strategies.sh             # the simulated part only
#   NODE_ONLY=1 REPEATS=1 WORKLOAD=tiny.toml scripts/lua-strategies.sh
#
# Simulation: the seed's two applications, examples/scenarios/varysched.toml
# (100 matrix multiplications) and varysched-lama.toml (24 CG solves), the
# median makespan over ORDERS seeded orders (default 20: the jobs of a
# scenario are identical, so orders differ only in names; ~1 s in all).
# Node: WORKLOAD (default examples/varysched.toml: 12 jobs of 0.45-1.5 s)
# under `cosched run`, REPEATS runs each (default 3; ~5-10 s a run, ~4 min
# in all), the governor set through `cosched governor` (a file of a
# temporary directory, so the user's level is left alone).
# Prints CSV: strategy,governor,engine,workload,makespan_s.
set -euo pipefail
cd "$(dirname "$0")/.."
COSCHED=${COSCHED:-./target/release/cosched}
ORDERS=${ORDERS:-20}
REPEATS=${REPEATS:-3}
WORKLOAD=${WORKLOAD:-examples/varysched.toml}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COSCHED_GOVERNOR="$tmp/governor"
pick() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

echo "strategy,governor,engine,workload,makespan_s"
if [ "${NODE_ONLY:-0}" != 1 ]; then
  for sc in varysched varysched-lama; do
    for s in short-term long-term banking constraint; do
      for g in high low; do
        m=$("$COSCHED" simulate --scenario "examples/scenarios/$sc.toml" --orders "$ORDERS" --seed 1 \
              --policy "lua:path=examples/lua/$s.lua,governor=$g" --json | pick 'd["median_makespans"][0]["seconds"]')
        echo "$s,$g,simulation (median of $ORDERS orders),$sc,$m"
      done
    done
  done
fi
[ "${SIM_ONLY:-0}" = 1 ] && exit 0
for s in short-term long-term banking constraint; do
  for g in high low; do
    "$COSCHED" governor "$g" >/dev/null
    m=$("$COSCHED" run --workload "$WORKLOAD" --policy "lua:path=examples/lua/$s.lua" \
          --repeats "$REPEATS" --solo stored --json 2>"$tmp/run.log" | pick 'd["summary"][0]["figures"]["makespan"]["median"]')
    echo "$s,$g,node (median of $REPEATS runs),$(basename "$WORKLOAD" .toml),$m"
  done
done
