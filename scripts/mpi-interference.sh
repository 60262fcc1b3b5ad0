#!/bin/sh
# The Xeon Phi study's foreground/background interference ratios with a real
# MPI communication job: examples/mpi.toml's Open MPI jobs (ping-pong, 1 KiB -
# 4 MiB messages, and an allreduce collective, two ranks each on one core)
# beside its computation jobs (FMA chains, STREAM triad) on the other core,
# every job in both roles. `cosched pairs` is the study's method: the
# foreground is timed while its co-runner (the background) repeats until the
# foreground ends; interference ratio = solo time / co-run time (1 = no
# interference, 0.5 = twice as slow), the inverse of cosched's slowdown.
#
#   scripts/mpi-interference.sh [OUT_DIR]          # 3-6 repeats a pair: ~10 min on a quiet node
#   TINY=1 scripts/mpi-interference.sh /tmp/mpi    # 2 repeats a pair: ~3 min, rough
#   ANALYZE_ONLY=1 scripts/mpi-interference.sh OUT # the tables again from OUT's JSON
#
# Needs Open MPI (openmpi-bin, libopenmpi-dev; ./install.sh installs them)
# and python3 for the tables. Run from anywhere: the workload's commands name
# examples/mpi/bin/comm relative to the repository, so the script runs from it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
out="${1:-mpi-interference-out}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
cosched="${COSCHED:-$repo/target/release/cosched}"
[ -x "$cosched" ] || cosched=cosched
workload="${WORKLOAD:-$repo/examples/mpi.toml}"
OUT="$out" COSCHED="$cosched"
export OUT COSCHED
. "$here/common.sh"
db="${COSCHED_DB:-$out/cosched.db}"
if [ "${TINY:-0}" = 1 ]; then reps="--repeats 2 --min-repeats 2"; else reps="--repeats 6 --min-repeats 3"; fi
# `cosched pairs` does not pass a job's `env` (examples/mpi.toml's leave to
# run Open MPI as root) to its processes; they inherit the script's.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
if [ "${ANALYZE_ONLY:-0}" != 1 ]; then
    "$repo/examples/mpi/build.sh" >/dev/null
    echo "== $(date -u +%H:%M:%S) load: $(cat /proc/loadavg)" | tee -a "$out/load.log"
    regime "before pairs"
    # shellcheck disable=SC2086
    (cd "$repo" && "$cosched" pairs --workload "$workload" $reps --db "$db" --svg "$out/pairs.svg" --json) > "$out/pairs.json"
    regime "after pairs"
    echo "== $(date -u +%H:%M:%S) load: $(cat /proc/loadavg)" | tee -a "$out/load.log"
fi
python3 - "$out" "$workload" <<'PY'
import json, sys, tomllib
out, workload = sys.argv[1], sys.argv[2]
w = tomllib.load(open(workload, "rb"))
comm = {j["name"] for j in w["jobs"] if "mpirun" in str(j.get("command", ""))}
m = json.load(open(f"{out}/pairs.json"))
m = m.get("matrix", m)
jobs = m["jobs"]
def role(n):
    return "communication" if n in comm else "computation"
def ratio(cell):
    # The ratio of the median slowdown and the range of its repeats
    # (min .. max of the slowdowns, inverted).
    if cell is None:
        return None
    return 1.0 / cell["median"], 1.0 / cell["max"], 1.0 / cell["min"], cell["n"]
print("Interference ratio (solo time / time beside the background; 1 = none), median [range over the repeats] (n)")
for fg_role, bg_role in [("communication", "computation"), ("computation", "communication"), ("communication", "communication"), ("computation", "computation")]:
    rows = []
    for i, a in enumerate(jobs):
        for j, b in enumerate(jobs):
            if i == j or role(a) != fg_role or role(b) != bg_role:
                continue
            x = ratio(m["cells"][i][j])
            if x is None:
                continue
            r, lo, hi, n = x
            rows.append(f"| {a} | {b} | {r:.2f} [{lo:.2f}, {hi:.2f}] | {n} |")
    if rows:
        print(f"\n{fg_role} foreground, {bg_role} background:\n")
        print("| foreground | background | ratio | n |\n|---|---|---|---|")
        print("\n".join(rows))
PY
