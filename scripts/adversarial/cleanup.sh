# Issue 36: measuring verbs clean up, store faults lose no work, read-only
# verbs create nothing. Sourced by scripts/adversarial.sh (its helpers:
# check, skip, rc, wl, has, $C, $W, $root); runs on its own too:
#   sh scripts/adversarial/cleanup.sh           # KILLS SIGKILLs of pairs, as many of profile
#   KILLS=25 sh scripts/adversarial/cleanup.sh  # the bar: 50 kills in all (about 4 minutes)
if ! command -v check >/dev/null 2>&1; then
    set -u
    cd "$(dirname "$0")/../.."
    C=${COSCHED:-target/release/cosched}
    [ -x "$C" ] || C=$(command -v cosched)
    KILLS=${KILLS:-20}
    W=$(mktemp -d /tmp/cosched-cleanup.XXXXXX)
    export COSCHED_DATA_DIR="$W/data" COSCHED_DB="$W/c.db"
    unset COSCHED_RUN_LOCK
    fails=0; n=0; root=0; [ "$(id -u)" = 0 ] && root=1; standalone=1
    check() {
        n=$((n + 1))
        if [ "$2" = "$3" ]; then printf 'ok    %-58s expected %s, got %s\n' "$1" "$2" "$3"
        else printf 'FAIL  %-58s expected %s, got %s\n' "$1" "$2" "$3"; fails=$((fails + 1)); fi
    }
    skip() { printf 'skip  %-58s %s\n' "$1" "$2"; }
    rc() { "$@" >"$W/out" 2>"$W/err" </dev/null; echo $?; }
    wl() { printf '%s\n' "$2" >"$W/$1.toml"; echo "$W/$1.toml"; }
    has() { grep -q -- "$1" "$W/err" && echo yes || echo no; }
fi

echo "== cleanup: SIGKILL of measuring verbs ($KILLS of pairs, $KILLS of profile)"
# The node lock every verb takes (scripts/adversarial.sh unsets COSCHED_RUN_LOCK).
lockf=${COSCHED_RUN_LOCK:-/run/lock/cosched-node.lock}
[ -w /run/lock ] || lockf=${COSCHED_RUN_LOCK:-${TMPDIR:-/tmp}/cosched-node.lock}
ck="cosched-adv-cleanup-$$"
# Jobs whose processes outlive their leader's death by seconds: a child
# in the leader's process group, as a shell script's commands are.
cw=$(wl cleanup "[[jobs]]
name = \"a\"
command = [\"sh\", \"-c\", \"sh -c 'sleep 3; : $ck' & sleep 3; wait\"]
[[jobs]]
name = \"b\"
command = [\"sh\", \"-c\", \"sleep 2; : $ck\"]")
alive() { pgrep -f "$ck" | wc -l; }
lock_free() { flock -n "$lockf" true 2>/dev/null && echo yes || echo no; }
for verb in pairs profile; do
    orphans=0; early=0; i=0
    while [ $i -lt "$KILLS" ]; do
        i=$((i + 1))
        case $verb in
            pairs) $C pairs --workload "$cw" --repeats 2 --min-repeats 2 --db "$W/cleanup-$verb-$i.db" >/dev/null 2>&1 & ;;
            profile) $C profile --workload "$cw" --repeats 2 --interval 100ms --syscalls proc --db "$W/cleanup-$verb-$i.db" >/dev/null 2>&1 & ;;
        esac
        r=$!
        sleep "$(awk -v s="$i" 'BEGIN { srand(s * 7 + 3); printf "%.2f", 0.1 + rand() * 3.9 }')"
        kill -KILL $r 2>/dev/null; wait $r 2>/dev/null
        # For 1 s: whenever the lock is free, no job of the killed verb may
        # live (checked again a moment later, so a process caught exiting
        # is not counted).
        t=0
        while [ $t -lt 20 ]; do
            if [ "$(lock_free)" = yes ] && [ "$(alive)" -gt 0 ] && sleep 0.05 && [ "$(alive)" -gt 0 ]; then
                early=$((early + 1)); break
            fi
            sleep 0.05; t=$((t + 1))
        done
        orphans=$((orphans + $(alive)))
        pkill -KILL -f "$ck" 2>/dev/null
    done
    check "$verb: orphans after $KILLS SIGKILLs" 0 "$orphans"
    check "$verb: node lock free while a job lived" 0 "$early"
done

echo "== cleanup: the no-cgroups watchdog kills process groups under dash"
if command -v dash >/dev/null 2>&1; then
    setsid sh -c "sleep 30; : $ck-dash" &
    sleep 0.3
    pg=$(pgrep -f "$ck-dash" | head -1)
    dash -c "kill -s KILL -- -$pg" 2>/dev/null
    sleep 0.2
    check "dash: kill -s KILL -- -PGID (the watchdog's form) kills the group" 0 "$(pgrep -f "$ck-dash" | wc -l)"
    pkill -KILL -f "$ck-dash" 2>/dev/null
else
    skip "dash: the watchdog's kill" "no dash here"
fi

echo "== cleanup: a store held by another process loses no finished job"
bw=$(wl busyrun '[[pools]]
name = "host"
cores = 1
[[jobs]]
name = "a"
command = "sleep 2"
count = 2')
bdb="$W/busy.db"
$C run --workload "$bw" --policy exclusive --solo stored --db "$bdb" >"$W/busy.out" 2>"$W/busy.err" &
r=$!
sleep 1
# Another process holds the database for 13 s, across the first job's end.
python3 - "$bdb" <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
c.execute("BEGIN IMMEDIATE"); time.sleep(13); c.execute("COMMIT")
PY
h=$!
wait $r; got=$?; wait $h
check "run beside a 13 s database holder: finishes" 0 "$got"
check "  says what it waits to record" yes "$(grep -q 'waiting to record the end of job' "$W/busy.err" && echo yes || echo no)"
$C db export --format json --table run_jobs --db "$bdb" >"$W/busy.json" 2>/dev/null
check "  each job recorded ok once" "2 2" "$(python3 - "$W/busy.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows.get("run_jobs", rows) if isinstance(rows, dict) else rows
print(len(rows), sum(1 for r in rows if r.get("status") == "ok"))
PY
)"

echo "== cleanup: read-only verbs create and change nothing"
: >"$W/empty.db"
for v in "runs" "db info" "db check" "db export --format json"; do
    rc $C $v --db "$W/empty.db" >/dev/null
    check "$v on an empty --db: file stays empty" 0 "$(stat -c %s "$W/empty.db")"
    check "$v on a missing --db: no file made" no "$(rc $C $v --db "$W/missing.db" >/dev/null; [ -e "$W/missing.db" ] && echo yes || echo no)"
done
check "read-only verbs on an empty --db: no -journal/-wal/-shm" 0 "$(ls "$W"/empty.db-* "$W"/missing.db* 2>/dev/null | wc -l)"
check "db info on /dev/null: refused" 2 "$(rc $C db info --db /dev/null)"
check "  says it is not a regular file" yes "$(has 'not a regular file')"
if [ $root = 1 ]; then
    check "  no /dev/null-journal left" no "$([ -e /dev/null-journal ] && echo yes || echo no)"
fi
fut="$W/future.db"
python3 - "$fut" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE later (x)"); c.execute("PRAGMA user_version = 9999"); c.commit()
PY
check "db check on a future schema: refused" 2 "$(rc $C db check --db "$fut")"
check "  says it is newer" yes "$(has 'newer than this cosched knows')"

if [ "${standalone:-0}" = 1 ]; then
    echo
    echo "$fails of $n checks failed (workdir $W)"
    [ "$fails" = 0 ]
fi
