# Issue 40, outputs that disagree: one SWF replay's jobs.csv and SWF give
# each job the same processor count, and SWF's fields are integers even
# with --compress 2 (halved, fractional submit times).
echo "== outputs: jobs.csv and SWF agree, SWF fields are integers"

check "simulate --swf --compress 2 --report" 0 "$(rc $C simulate --swf examples/traces/NASA-iPSC-1993-3.1-cln.swf.gz --nodes 16 --cores 8 --compress 2 --policy conflict-aware:threshold=50 --report "$W/swfout")"
set -- $(python3 - "$W/swfout" <<'PY'
import csv, glob, sys
fractional = differ = 0
for swf in glob.glob(sys.argv[1] + "/*.swf"):
    procs = {}
    for line in open(swf):
        if line.startswith(";") or not line.strip():
            continue
        f = line.split()
        fractional += sum(1 for x in f if not x.lstrip("-").isdigit())
        procs[f[0]] = f[4]
    stem = swf.rsplit("/", 1)[1][:-4]
    for row in csv.DictReader(open(sys.argv[1] + "/jobs-" + stem + ".csv")):
        differ += procs.get(row["job_id"]) != row["requested_number_of_resources"]
print(fractional, differ)
PY
)
check "  SWF fields that are not integers" 0 "${1:-missing}"
check "  jobs whose processors differ between jobs.csv and SWF" 0 "${2:-missing}"
