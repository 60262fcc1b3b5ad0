#!/usr/bin/env bash
# Runs every test of the workspace. Real-process tests are short and pinned;
# a test that cannot run here (no Slurm, not root, one CPU) prints why and
# is counted: the run ends with a line naming every skipped test.
# COSCHED_REQUIRE_INSTALLED=1 (CI sets it) fails the run when a test that
# needs only what `.ci/run` installs was skipped.
set -euo pipefail
cd "$(dirname "$0")"
skips=$(mktemp /tmp/cosched-skips.XXXXXX)
trap 'rm -f "$skips"' EXIT
status=0
COSCHED_SKIP_LOG="$skips" cargo test --workspace --release --locked --no-fail-fast "$@" || status=$?
installed=$(grep -c '^installed' "$skips" || true)
echo "skipped tests: $(wc -l <"$skips") ($installed lacking what .ci/run installs)"
sort "$skips" | while IFS=$'\t' read -r kind name why; do
    echo "  skipped [$kind] $name: $why"
done
if [ "$status" = 0 ] && [ "${COSCHED_REQUIRE_INSTALLED:-0}" = 1 ] && [ "$installed" -gt 0 ]; then
    echo "error: $installed test(s) skipped for want of what .ci/run installs (see above)" >&2
    status=1
fi
exit "$status"
