# Shared by the measurement scripts (sourced, not run): the binary, and a
# line with the node's cache regime read now, logged to $OUT/regimes.log.
C=${COSCHED:-./target/release/cosched}
regime() { echo "== $(date -u +%H:%M:%S) $1: $($C node --latency 2>/dev/null | grep '0 <->' || echo 'no reading')" | tee -a "$OUT/regimes.log"; }
# wait_regime shared|apart MAX_SECONDS: returns once the node reads that
# regime (CPU 0-1 round trip below / above 200 ns, as model::compare
# classifies it) twice in a row, 5 s apart (the host can flicker for one
# reading), or fails after MAX_SECONDS; reads every 30 s.
round_trip_ns() {
    $C node --latency --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["latency"][0]["round_trip_ns"]["median"])' 2>/dev/null || echo ""
}
in_regime() { [ -n "$2" ] && python3 -c "import sys; sys.exit(0 if (float('$2') < 200) == ('$1' == 'shared') else 1)"; }
wait_regime() {
    local want=$1 max=$2 waited=0 ns
    while :; do
        ns=$(round_trip_ns)
        if in_regime "$want" "$ns"; then
            sleep 5
            ns=$(round_trip_ns)
            if in_regime "$want" "$ns"; then
                echo "== $(date -u +%H:%M:%S) in the $want regime ($ns ns, twice in a row)" | tee -a "$OUT/regimes.log"
                return 0
            fi
        fi
        if [ "$waited" -ge "$max" ]; then
            echo "== $(date -u +%H:%M:%S) not in the $want regime after ${max}s (last ${ns:-no} reading)" | tee -a "$OUT/regimes.log"
            return 1
        fi
        sleep 30
        waited=$((waited + 30))
    done
}
