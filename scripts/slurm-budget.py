#!/usr/bin/env python3
"""Where the Slurm path's latency goes, step by step, from one
scripts/slurm-overhead.sh work directory: per job, the times of

  submit     `cosched slurm submit` had the job id back (its JSON)
  decided    `cosched slurm serve` began releasing it (its JSON)
  released   Slurm had taken the release: the scontrol calls returned
  allocated  slurmctld's scheduling pass gave it cores (`sched: Allocate`,
             or backfill's `Started`, in slurmctld.log)
  launched   slurmd began launching it (`Launching batch job` in its log)
  started    its batch script stamped `cosched-start` (the makespan's clock)
  ended      its batch script stamped `cosched-end`
  completed  slurmctld recorded the end (`_job_complete ... done`)
  noticed    serve's first reading that showed it completing or gone

and the step a job waiting for cores pays between the end that freed them
and its own start (`end -> next start`), split into the steps above. Prints
the median, min and max over every job of every repeat, in milliseconds.

    scripts/slurm-budget.py WORK_DIR REPEATS
"""
import datetime
import glob
import json
import os
import re
import statistics
import sys


def log_times(path, pattern):
    """{job id: unix seconds} of the first line of a Slurm log matching
    `pattern` (group 1 the job id); log times are UTC (slurm-local.sh)."""
    out = {}
    if not os.path.exists(path):
        return out
    rx = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)\] .*" + pattern)
    with open(path, errors="replace") as f:
        for line in f:
            m = rx.match(line)
            if m:
                t = datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp()
                out.setdefault(int(m.group(2)), t)
    return out


def stamps(path):
    start = end = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("cosched-start "):
                start = float(line.split()[1])
            elif line.startswith("cosched-end "):
                end = float(line.split()[1])
    return start, end


def main():
    work, repeats = sys.argv[1], int(sys.argv[2])
    logs = os.path.join(work, "slurm", "log")
    allocated = log_times(os.path.join(logs, "slurmctld.log"), r"sched: Allocate JobId=(\d+) ")
    for k, v in log_times(os.path.join(logs, "slurmctld.log"), r"backfill: Started JobId=(\d+) ").items():
        allocated.setdefault(k, v)
    completed = log_times(os.path.join(logs, "slurmctld.log"), r"_job_complete: JobId=(\d+) done")
    launched = {}
    for path in glob.glob(os.path.join(logs, "slurmd-*.log")):
        launched.update(log_times(path, r"Launching batch job (\d+) "))
    steps = {}

    def add(step, value):
        if value is not None:
            steps.setdefault(step, []).append(1000.0 * value)

    for r in range(1, repeats + 1):
        try:
            submitted = {j["job"]: j.get("unix") for j in json.load(open(os.path.join(work, f"submit-{r}.json")))}
            serve = json.load(open(os.path.join(work, f"serve-{r}.json")))
        except (OSError, ValueError, KeyError) as e:
            print(f"repeat {r}: no budget ({e})")
            continue
        released = {x["job"]: x for x in serve.get("released", [])}
        noticed = {x["job"]: x["unix"] for x in serve.get("noticed", [])}
        times = {}
        for path in glob.glob(os.path.join(work, f"jobs-{r}", "*-*.out")):
            m = re.search(r"-(\d+)\.out$", path)
            if m:
                times[int(m.group(1))] = stamps(path)
        first = min(s for s, _ in times.values() if s is not None)
        for job, (start, end) in times.items():
            rel = released.get(job)
            d = lambda a, b: (b - a) if a is not None and b is not None else None
            if rel:
                add("decided -> released (scontrol calls)", d(rel.get("decided"), rel.get("unix")))
                add("released -> allocated (slurmctld pass)", d(rel.get("unix"), allocated.get(job)))
            add("allocated -> launched (slurmctld to slurmd)", d(allocated.get(job), launched.get(job)))
            add("launched -> started (slurmstepd, batch script)", d(launched.get(job), start))
            add("ended -> completed (slurmctld records the end)", d(end, completed.get(job)))
            add("completed -> noticed (serve reads it)", d(completed.get(job), noticed.get(job)))
            add("ended -> noticed", d(end, noticed.get(job)))
            # A job that waited for cores: the end that freed them (the last
            # end before its start) to its own start.
            if start is None or start <= first or not rel:
                continue
            before = [e for _, e in times.values() if e is not None and e <= start]
            if not before or (submitted.get(job) or 0) > max(before):
                continue
            freed_by = max(before)
            add("end -> next start (total)", start - freed_by)
            add("  of which: end -> noticed -> decided", d(freed_by, rel.get("decided")))
            add("  of which: decided -> started", d(rel.get("decided"), start))
    if not steps:
        print("no latency budget: no job of the repeats could be timed")
        return
    print(f"{'step':52} {'median ms':>10} {'min':>8} {'max':>8} {'n':>4}")
    for step, v in steps.items():
        print(f"{step:52} {statistics.median(v):10.0f} {min(v):8.0f} {max(v):8.0f} {len(v):4d}")


if __name__ == "__main__":
    main()
