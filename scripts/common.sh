# Shared by the measurement scripts (sourced, not run): the binary, and a
# line with the node's cache regime read now, logged to $OUT/regimes.log.
C=${COSCHED:-./target/release/cosched}
regime() { echo "== $(date -u +%H:%M:%S) $1: $($C node --latency 2>/dev/null | grep '0 <->' || echo 'no reading')" | tee -a "$OUT/regimes.log"; }
