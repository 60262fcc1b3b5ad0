#!/bin/sh
# The ParaStation paper's djsb table on this node: E_sim, E_ana, W, D under wait,
# surpass, overbook (pinned, spread, unpinned) and sidestep (compact,
# spread), 3 repeats each, beside the paper's values; then the same
# scenario in virtual time, to tell the model's ordering from the node's.
#
#   scripts/djsb.sh [OUT_DIR]           # the bar: ~30 min on a quiet 2-core node
#   TINY=1 scripts/djsb.sh /tmp/djsb    # a check that it runs: ~1 min
#
# Run it on a quiet node (nothing else compiling); it takes the node's run
# lock. A killed campaign continues with the same command plus RESUME=1
# (before any other run of the same workload finishes: the slowdown
# source, part of a series' settings, learns from finished runs).
set -eu
out="${1:-djsb-out}"
# This checkout's build first: an older cosched installed on PATH may lack verbs.
cosched="${COSCHED:-$(dirname "$0")/../target/release/cosched}"
[ -x "$cosched" ] || cosched=cosched
mkdir -p "$out"
# The node's cache regime before each step, logged to $out/regimes.log.
OUT="$out" COSCHED="$cosched"
export OUT COSCHED
. "$(dirname "$0")/common.sh"
if [ "${TINY:-0}" = 1 ]; then
    sizes="--simulation-s 2 --analysis-s 0.4 --sessions 2 --first-at 0.4 --every 0.8 --array-mib 8"
    repeats=1
else
    # The paper's proportions: a long simulation, short analyses (a tenth).
    sizes="--simulation-s 40 --analysis-s 4 --sessions 3 --first-at 5 --every 10"
    repeats=3
fi
resume=""
[ "${RESUME:-0}" = 1 ] && resume="--resume"
db="${COSCHED_DB:-$out/cosched.db}"
regime "djsb on this node"
# shellcheck disable=SC2086
"$cosched" djsb --dir "$out/real" --db "$db" --repeats "$repeats" $sizes $resume | tee "$out/djsb-real.txt"
cp "$out/real/djsb.json" "$out/djsb-real.json"
# The model's view: neutral pair slowdown, and STREAM beside STREAM's
# (1.3 is a typical measured pair on this node; see `cosched pairs`).
for s in 1.0 1.3; do
    # shellcheck disable=SC2086
    "$cosched" djsb --dir "$out/sim-$s" --simulate "$s" $sizes | tee "$out/djsb-sim-$s.txt"
done
echo "tables: $out/djsb-real.txt (this node; every run's sessions in $out/djsb-real.json), $out/djsb-sim-*.txt (simulator); report: $out/real/report/index.html"
