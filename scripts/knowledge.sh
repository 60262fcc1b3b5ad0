#!/usr/bin/env bash
# The knowledge-base campaign: characterize, profile, probe and pair both
# training sets (our kernels and stress-ng in examples/predict12.toml; the
# Debian applications in examples/apps/apps.toml), then predict each from the
# other (cross-workload) and report the accuracy beside the node's own
# repeat-halves noise floor, and the cost of characterizing a new program.
# Needs examples/apps/install.sh first; a quiet node; about 3 hours.
#
#   scripts/knowledge.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-knowledge-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$OUT"
# shellcheck source=scripts/common.sh
. scripts/common.sh
DB="$OUT/kb.db"

regime "characterize apps (cost of a new program)"
$C characterize --workload examples/apps/apps.toml --db "$DB" --json > "$OUT/characterize-apps.json" 2> "$OUT/characterize-apps.log"
for w in examples/predict12.toml examples/apps/apps.toml; do
    n=$(basename "$w" .toml)
    regime "profile + probe $n"
    $C profile --workload "$w" --repeats 3 --db "$DB" > "$OUT/profile-$n.txt" 2>&1
    $C probe --workload "$w" --repeats 2 --db "$DB" > "$OUT/probe-$n.txt" 2>&1
    regime "pairs $n"
    $C pairs --workload "$w" --repeats 6 --min-repeats 4 --target 0.03 --db "$DB" > "$OUT/pairs-$n.txt" 2>&1
    regime "after pairs $n"
done
$C evaluate-predictors --workload examples/predict12.toml --train examples/apps/apps.toml --db "$DB" > "$OUT/cross-apps-to-predict12.txt"
$C evaluate-predictors --workload examples/apps/apps.toml --train examples/predict12.toml --db "$DB" > "$OUT/cross-predict12-to-apps.txt"
$C evaluate-predictors --workload examples/apps/apps.toml --db "$DB" > "$OUT/lopo-apps.txt"
echo "results in $OUT"
