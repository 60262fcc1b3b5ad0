#!/usr/bin/env bash
# The knowledge-base campaign: characterize, profile, probe and pair both
# training sets (our kernels and stress-ng in examples/predict12.toml; the
# Debian applications in examples/apps/apps.toml), then predict each from the
# other (cross-workload) and report the accuracy beside the node's own
# repeat-halves noise floor, and the cost of characterizing a new program.
# Needs examples/apps/install.sh first; a quiet node; about 3 hours.
#
#   scripts/knowledge.sh [OUT_DIR]
#   timeout 3600 scripts/knowledge.sh OUT   # one hour of it; the same command
#                                           # later continues where it stopped
#
# Resumable in pieces, so the campaign fits in quiet windows: a finished
# step leaves OUT/STEP.done and is skipped next time; an interrupted pair
# campaign continues with `pairs --resume`. Every pair and probe repeat
# carries the regime it ran in, so pieces taken in different regimes stay
# apart in the store (the regime of each step is in OUT/regimes.log too).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-knowledge-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$OUT"
# shellcheck source=scripts/common.sh
. scripts/common.sh
DB="$OUT/kb.db"

# step NAME COMMAND...: runs COMMAND once; skipped when OUT/NAME.done exists.
step() {
    local name=$1
    shift
    if [ -e "$OUT/$name.done" ]; then
        echo "== $name: done in an earlier piece, skipped"
        return
    fi
    regime "$name"
    "$@"
    touch "$OUT/$name.done"
}
characterize() {
    $C characterize --workload examples/apps/apps.toml --db "$DB" --json > "$OUT/characterize-apps.json" 2> "$OUT/characterize-apps.log"
}
profile() { $C profile --workload "$1" --repeats 3 --db "$DB" > "$OUT/profile-$2.txt" 2>&1; }
probe() { $C probe --workload "$1" --repeats 2 --db "$DB" > "$OUT/probe-$2.txt" 2>&1; }
pairs() {
    local resume=()
    # A pair campaign that began in an earlier piece continues, keeping its repeats.
    [ -e "$OUT/pairs-$2.started" ] && resume=(--resume)
    touch "$OUT/pairs-$2.started"
    $C pairs --workload "$1" --repeats 6 --min-repeats 4 --target 0.03 "${resume[@]}" --db "$DB" >> "$OUT/pairs-$2.txt" 2>&1
}

step characterize-apps characterize
for w in examples/predict12.toml examples/apps/apps.toml; do
    n=$(basename "$w" .toml)
    step "profile-$n" profile "$w" "$n"
    step "probe-$n" probe "$w" "$n"
    step "pairs-$n" pairs "$w" "$n"
done
regime "evaluate"
# Per cache regime: each pair's repeats in it where it has any (the output
# counts the pairs that had none and fell back to all their repeats).
for r in apart shared; do
    $C evaluate-predictors --regime $r --workload examples/predict12.toml --train examples/apps/apps.toml --db "$DB" > "$OUT/cross-apps-to-predict12-$r.txt"
    $C evaluate-predictors --regime $r --workload examples/apps/apps.toml --train examples/predict12.toml --db "$DB" > "$OUT/cross-predict12-to-apps-$r.txt"
    $C evaluate-predictors --regime $r --workload examples/apps/apps.toml --db "$DB" > "$OUT/lopo-apps-$r.txt"
done
echo "results in $OUT"
