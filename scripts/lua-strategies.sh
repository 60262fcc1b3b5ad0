#!/usr/bin/env bash
# Issue 17's figure: the makespan of seed 003(f)'s four strategies
# (examples/lua/{short-term,long-term,banking,constraint}.lua) under both
# governor levels, in simulation and on this node.
#
#   scripts/lua-strategies.sh                  # both; on a quiet node
#   SIM_ONLY=1 ORDERS=20 scripts/lua-strategies.sh   # a quick check
#
# Simulation: examples/scenarios/varysched.toml, the median makespan over
# ORDERS seeded orders (default 1000; about 1 s per strategy and level plus
# the oracle's local search, ~1 min in all). Node: examples/varysched.toml
# under `cosched run`, REPEATS runs each (default 3; 11 jobs of 0.5-1 s,
# ~5-8 s a run, ~4 min in all), the governor set through `cosched governor`
# (a file of a temporary directory, so the user's level is left alone).
# Prints CSV: strategy,governor,engine,makespan_s.
set -euo pipefail
cd "$(dirname "$0")/.."
COSCHED=${COSCHED:-./target/release/cosched}
ORDERS=${ORDERS:-1000}
REPEATS=${REPEATS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export COSCHED_GOVERNOR="$tmp/governor"
median() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

echo "strategy,governor,engine,makespan_s"
for s in short-term long-term banking constraint; do
  for g in high low; do
    m=$("$COSCHED" simulate --scenario examples/scenarios/varysched.toml --orders "$ORDERS" --seed 1 \
          --policy "lua:path=examples/lua/$s.lua,governor=$g" --json | median 'd["oracle"]["policies"][0]["median_makespan"]')
    echo "$s,$g,simulation (median of $ORDERS orders),$m"
  done
done
[ "${SIM_ONLY:-0}" = 1 ] && exit 0
for s in short-term long-term banking constraint; do
  for g in high low; do
    "$COSCHED" governor "$g" >/dev/null
    m=$("$COSCHED" run --workload examples/varysched.toml --policy "lua:path=examples/lua/$s.lua" \
          --repeats "$REPEATS" --solo stored --json 2>"$tmp/run.log" | median 'd["summary"][0]["figures"]["makespan"]["median"]')
    echo "$s,$g,node (median of $REPEATS runs),$m"
  done
done
