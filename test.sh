#!/usr/bin/env bash
# Runs every test of the workspace. Real-process tests are short and pinned;
# tests needing a package this machine lacks skip with a printed reason.
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace --release --locked "$@"
