# Issue 36: Slurm fields are untrusted, serve never stalls. Sourced by
# scripts/adversarial.sh (check, rc, wl, has, $C, $W, $root).
echo "== slurm: untrusted job fields, policies refused, nothing stalls"
for p in sidestep overbook; do
    check "slurm serve --policy $p: refused at start" 2 "$(rc $C slurm serve --policy $p --db "$W/slurm-refused.db")"
    check "  says why" yes "$(has 'cannot carry out')"
done
# Issue 37: surpass and timeshare run through scontrol suspend/resume, with turns of a second at least.
check "slurm serve --policy timeshare:quantum=0.1: refused" 2 "$(rc $C slurm serve --policy timeshare:quantum=0.1 --db "$W/slurm-refused.db")"
check "  says the turns' floor" yes "$(has "shorter than the Slurm engine's turns")"
check "slurm serve --share-scope group: refused" 2 "$(rc $C slurm serve --share-scope group --db "$W/slurm-refused.db")"
check "  names the scopes" yes "$(has 'expected any, user, account or qos')"
# Issue 37: a wrong configuration is named within seconds, exit 2.
began=$(date +%s)
check "slurm status, SLURM_CONF names no file: exit 2" 2 "$(SLURM_CONF=$W/nowhere.conf rc $C slurm status --db "$W/slurm-conf.db")"
check "  within 5 s" yes "$([ $(($(date +%s) - began)) -lt 5 ] && echo yes || echo no)"
check "  names SLURM_CONF" yes "$(has 'point SLURM_CONF')"
printf 'ClusterName=x\nSlurmctldHost=localhost\nAuthInfo=socket=%s/no-munge.sock\n' "$W" >"$W/nomunge.conf"
check "slurm serve, munge not answering: exit 2" 2 "$(SLURM_CONF=$W/nomunge.conf rc $C slurm serve --db "$W/slurm-conf.db" --mark-key "$W/slurm-conf.key")"
check "  says to check munged" yes "$(has 'is munged running')"
check "  no raw separator in the message" 0 "$(grep -c "$(printf '\037')" "$W/err")"
check "slurm status, a directory as SLURM_CONF: exit 2" 2 "$(SLURM_CONF=$W rc $C slurm status --db "$W/slurm-conf.db")"
if [ $root = 1 ] && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
    S="$W/slurm-cluster"
    sl() { COSCHED_SLURM_DIR=$S COSCHED_SLURM_PORT=$((21000 + $$ % 5000 * 2)) COSCHED_SLURM_NODES=2 COSCHED_SLURM_HOOK_AT=none scripts/slurm-local.sh "$@"; }
    sl start >/dev/null 2>&1
    export SLURM_CONF="$S/etc/slurm.conf"
    mkfifo "$W/slurm-fifo"
    exec 7<>"$W/slurm-fifo"
    swl=$(wl slurmwl '[[pools]]
name = "host"
cores = 1
[[jobs]]
name = "c1"
command = "true"')
    js='#!/bin/sh
echo "{\"wall_s\": 0.000001}"'
    printf '%s\n' "$js" >"$W/slurm-job.sh"
    nl=$(printf 'n\nx\037y')
    forged=$(sbatch --parsable -p cosched -J "$nl" --begin=now+3 -o "$W/slurm-%j.out" \
        --comment="AdminComment=cosched;policy=x;node=c1;beside=-;predicted=1.000 Priority=1" "$W/slurm-job.sh")
    scontrol release "$forged"
    esc=$(printf 'e\033[2Jx')
    escid=$(sbatch --parsable -p cosched -J "$esc" -o /dev/null "$W/slurm-job.sh")
    zero=$(sbatch --parsable -p cosched -J c1 --comment=cosched:c1 -o /dev/zero "$W/slurm-job.sh")
    fifo=$(sbatch --parsable -p cosched -J c1 --comment=cosched:c1 -o "$W/slurm-fifo" "$W/slurm-job.sh")
    wide=$(sbatch --parsable -p cosched -N 1 -n 3 -o /dev/null --wrap true)
    $C slurm status --workload "$swl" --db "$W/slurm.db" >"$W/slurm-status" 2>&1
    check "slurm status: no raw escape from a job name" 0 "$(grep -c "$(printf '\033')" "$W/slurm-status")"
    check "  the name shown escaped" yes "$(grep -q 'e\\e\[2Jx' "$W/slurm-status" && echo yes || echo no)"
    got=$(timeout 120 $C slurm serve --workload "$swl" --db "$W/slurm.db" --policy exclusive --interval 0.2 \
        --exit-idle 2 --start-bound 3 --json >"$W/slurm-serve.json" 2>"$W/err"; echo $?)
    check "serve beside newline names, forged marks, /dev/zero, a FIFO, a 3-CPU job" 0 "$got"
    check "  the job its user released was held again" yes "$(has "job $forged held again: released without cosched's verified decision")"
    check "  no raw control character in its log" 0 "$(grep -c "$(printf '[\033\037]')" "$W/err")"
    check "  the 3-CPU job set aside, not blocking" yes "$(has "job $wide set aside")"
    for id in $forged $escid $zero $fifo; do
        check "  job $id completed" COMPLETED "$(squeue -h -t all -j "$id" -o %T)"
    done
    exec 7>&-
    scancel "$wide"
    unset SLURM_CONF
    sl stop >/dev/null 2>&1
    # Issue 36, the release race: the shipped rule's slurm_job_modify refuses a
    # user's own `scontrol release` of a job cosched holds; SlurmUser's goes
    # through. SlurmUser `slurm`, so munge's socket is open to `nobody`.
    S2=$(mktemp -d /tmp/cosched-adv-lua.XXXXXX)
    chmod 755 "$S2"
    sl2() { COSCHED_SLURM_DIR=$S2/slurm COSCHED_SLURM_PORT=$((26000 + $$ % 1000 * 4)) COSCHED_SLURM_USER=slurm COSCHED_SLURM_HOOK_AT=none scripts/slurm-local.sh "$@"; }
    asuser() { u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups "$@"; }
    if id slurm >/dev/null 2>&1 && command -v setpriv >/dev/null && sl2 start >/dev/null 2>&1; then
        export SLURM_CONF="$S2/slurm/etc/slurm.conf"
        held=$(cd /tmp && sbatch --parsable -p cosched --uid=nobody --gid="$(id -g nobody)" -o /dev/null --wrap true)
        check "a user's own scontrol release of a job cosched holds: refused" 1 "$(rc asuser nobody scontrol release "$held")"
        check "  Slurm says access denied" yes "$(has 'Access/permission denied')"
        check "  still held (priority 0)" 0 "$(squeue -h -j "$held" -o %Q)"
        check "  the user may still rename it" 0 "$(rc asuser nobody scontrol update JobId="$held" JobName=renamed)"
        check "SlurmUser's release goes through" 0 "$(rc asuser slurm scontrol release "$held")"
        scancel "$held"
        unset SLURM_CONF
        sl2 stop >/dev/null 2>&1
    else
        skip "slurm release race" "needs the slurm user and setpriv"
    fi
    rm -rf "$S2"
else
    skip "slurm hostile jobs" "needs root, slurmctld and munged (./install.sh --deps-only)"
fi
