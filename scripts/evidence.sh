#!/usr/bin/env bash
# The real-run evidence of docs/measurements.md, in one go, on a quiet node:
# each step reads the cache regime first (CPU 0-1 round trip: tens of ns =
# the vCPUs share a cache, hundreds = apart), so every figure can be
# compared within one regime. Run nothing else on the node meanwhile.
#
#   scripts/evidence.sh [OUT_DIR]      # about 35 minutes on the 2-core VM
#
# 1. `run --policy exclusive --repeats 5` on the mixed workload: a job alone
#    should measure 1.00 against its solo reference (each job's median).
# 2. memory-half and few-bad: pairs, then `evaluate` best-match vs noplan on
#    seeded random orders, the same for both, until resolved or 12 orders,
#    counting only orders in REGIME (default shared: with the caches apart
#    two triads barely contend and there is no bad pair to avoid); each
#    step waits up to WAIT_S seconds (default 3600) for that regime.
#
# 3. io-half: the same comparison on file-I/O jobs, which contend for the
#    disk in either regime, so it runs whatever the regime (each order's
#    regime is still recorded).
#
#   REGIME=apart scripts/evidence.sh OUT    # the comparison in the other regime
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-evidence-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$OUT"
# shellcheck source=scripts/common.sh
. scripts/common.sh
DB="$OUT/evidence.db"
REGIME=${REGIME:-shared}
WAIT_S=${WAIT_S:-3600}

if [ "$(cut -d' ' -f1 /proc/loadavg | cut -d. -f1)" -ge 1 ]; then
    echo "warning: load average $(cut -d' ' -f1-3 /proc/loadavg): the node is not quiet; figures will be wider" | tee -a "$OUT/regimes.log"
fi

regime "exclusive series"
$C run --workload examples/mixed.toml --policy exclusive --repeats 5 --db "$DB" --json > "$OUT/exclusive.json" 2> "$OUT/exclusive.log"
regime "after the exclusive series"

for w in memory-half few-bad; do
    wait_regime "$REGIME" "$WAIT_S" || { echo "skipping $w: the node stayed out of the $REGIME regime"; continue; }
    regime "pairs $w"
    $C pairs --workload "examples/$w.toml" --repeats 3 --db "$DB" --json > "$OUT/pairs-$w.json" 2> "$OUT/pairs-$w.log"
    regime "evaluate $w"
    $C evaluate --workload "examples/$w.toml" --policy best-match --metric worst-slowdown \
        --min-orders 5 --max-orders 12 --seed 7 \
        --regime "$REGIME" --regime-wait "${WAIT_S}s" --db "$DB" --report "$OUT/eval-$w" > "$OUT/eval-$w.txt" 2> "$OUT/eval-$w.log" ||
        echo "evaluate $w ended early: $(tail -1 "$OUT/eval-$w.log")"
    regime "after $w"
done
# Two file-I/O jobs queue on the one disk in either cache regime: io-half
# needs no wait, and its orders are counted whatever regime they read.
regime "pairs io-half"
$C pairs --workload examples/io-half.toml --repeats 3 --db "$DB" --json > "$OUT/pairs-io-half.json" 2> "$OUT/pairs-io-half.log"
regime "evaluate io-half"
$C evaluate --workload examples/io-half.toml --policy best-match --metric worst-slowdown \
    --min-orders 5 --max-orders 12 --seed 7 --db "$DB" --report "$OUT/eval-io-half" > "$OUT/eval-io-half.txt" 2> "$OUT/eval-io-half.log" ||
    echo "evaluate io-half ended early: $(tail -1 "$OUT/eval-io-half.log")"
regime "after io-half"
echo "results in $OUT: exclusive.json (per-job slowdowns), eval-*.txt (tables with regimes per order)"
