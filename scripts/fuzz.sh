#!/bin/sh
# Fuzzes the workload, scenario and SWF parsers for N minutes each (default
# 10, the bar of issue 19) and prints how many inputs each ran, without a
# panic, a hang or memory growth past 1 GiB. cargo-fuzz needs a nightly
# toolchain, so these are the test suite's own random-input tests
# (crates/model/tests/fuzz.rs, crates/sched/tests/fuzz.rs) run for a time
# budget instead of their default 10,000 inputs.
#
#   scripts/fuzz.sh            # 10 minutes per parser
#   scripts/fuzz.sh 1 42       # 1 minute each, seed 42
set -eu
minutes=${1:-10}
seed=${2:-6221081}
cd "$(dirname "$0")/.."
secs=$(awk "BEGIN { print $minutes * 60 }")
cargo test --release -p cosched-model -p cosched-sched --test fuzz --no-run >/dev/null 2>&1
cargo test --release -p cosched-cluster --test swf_fuzz --no-run >/dev/null 2>&1
for crate in cosched-model cosched-sched; do
    COSCHED_FUZZ_SECONDS=$secs COSCHED_FUZZ_SEED=$seed \
        cargo test --release -q -p "$crate" --test fuzz -- --nocapture 2>&1 | grep -E '^fuzz |panicked|FAILED' || true
done
COSCHED_FUZZ_SECONDS=$secs cargo test --release -q -p cosched-cluster --test swf_fuzz random_traces_for_a_time_budget -- --nocapture 2>&1 |
    grep -E '^fuzz |panicked|FAILED' || true
