#!/bin/sh
# The fault test at scale with its figures printed (`cargo test` runs it
# too, quietly): 500 `sleep 0.1` jobs queued at once on a local cluster of
# 8 nodes of 2 cores, `cosched slurm serve --policy noplan` deciding. Every
# job must run exactly once, none stay held, none be held more than two
# rounds after the round that could first start it (serve's round log,
# counted in rounds), and no round may have seen a core busy that Slurm's
# record says was free. Prints wall time, rounds, round times and RPCs per
# round (sdiag). Needs root, slurmctld, slurmd and munged, as the other
# Slurm tests; COSCHED_TEST_SLURM_PORT picks the controller's port.
set -eu
cd "$(dirname "$0")/.."
exec cargo test --release --locked -p cosched --test slurm_faults -- --nocapture five_hundred
