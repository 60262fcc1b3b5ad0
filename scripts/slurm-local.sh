#!/usr/bin/env bash
# A Slurm cluster on this one host, for cosched's tests and demo: munge,
# slurmctld and slurmd from Debian's slurm-wlm packages, a generated
# slurm.conf (select/cons_tres with CR_Core, task/affinity binding, a
# `cosched` partition whose jobs share nodes core by core), a job_submit.lua
# that holds every job of that partition until cosched releases it, and all
# state and logs in one directory.
#
#   scripts/slurm-local.sh start    # idempotent: a running cluster is left as it is
#   scripts/slurm-local.sh status   # daemons, nodes, queue; exit 1 when not running
#   scripts/slurm-local.sh stop     # stops every daemon it started, removes the directory
#   scripts/slurm-local.sh env      # the variables that point Slurm's commands at it
#   scripts/slurm-local.sh restart-ctld   # kill slurmctld and start it again from its saved state
#
# Variables (all optional):
#   COSCHED_SLURM_DIR   state directory (default /tmp/cosched-slurm-$UID)
#   COSCHED_SLURM_PORT  slurmctld port; slurmd uses the next one (default 16817)
#   COSCHED_SLURM_CPUS  CPUs each node declares (default: this host's)
#   COSCHED_SLURM_NODES nodes (default 1, named after this host); N > 1 runs
#                       N slurmd (`slurmd -N cK`, a port each) named c1..cN,
#                       which all share this host's CPUs: for the decisions
#                       over several nodes, not for their timings
#   COSCHED_SLURM_MEM   RealMemory of each node, MB (default: unset, Slurm's 1):
#                       what cosched counts jobs' --mem against (memory is
#                       not a consumable of this cluster's CR_Core; cosched
#                       keeps co-located jobs within it)
#   COSCHED_SLURM_GPUS  GPUs each node declares (default: none): GresTypes=gpu,
#                       `Gres=gpu:N` on each node, and a gres.conf whose
#                       `File=` names N stand-in device nodes (see gres_lines).
#                       Jobs ask with --gres=gpu:K; Slurm allocates GPUs by
#                       index, cosched shows them to the policy as the node's
#                       accelerator pool and never places more than N at once
#   COSCHED_BIN         the cosched binary the epilog runs (`cosched slurm
#                       hook`) to wake `cosched slurm serve --hook` at each
#                       job's end (default: `cosched` on the PATH, else
#                       target/release/cosched); none found: no epilog
#   COSCHED_SLURM_USER  SlurmUser, the user slurmctld runs as (default root);
#                       another (e.g. slurm) owns the controller's state and
#                       logs, as on a site, so `cosched slurm serve` can run
#                       as that user, not root (docs/slurm.md, step 5)
#   COSCHED_SLURM_HOOK_AT  slurmd (default: `Epilog=`, run on the job's node
#                       when it ends; waiting for serve's round there lets
#                       Slurm's pass at the job's end start what it
#                       released) or slurmctld (`EpilogSlurmctld=`, on the
#                       controller, as on a cluster whose nodes are not
#                       cosched's host) or none
#
# Use it with: eval "$(scripts/slurm-local.sh env)"; sbatch -p cosched ...
#
# Debian 12's slurmd (22.05.8) runs several daemons on one host (`slurmd -N
# NAME`, a port per node in slurm.conf), so COSCHED_SLURM_NODES=2 gives a
# two-node cluster on this host.
set -euo pipefail

DIR=${COSCHED_SLURM_DIR:-/tmp/cosched-slurm-$(id -u)}
PORT=${COSCHED_SLURM_PORT:-16817}
CPUS=${COSCHED_SLURM_CPUS:-$(nproc)}
NODES=${COSCHED_SLURM_NODES:-1}
MEM=${COSCHED_SLURM_MEM:+RealMemory=$COSCHED_SLURM_MEM}
GPUS=${COSCHED_SLURM_GPUS:-0}
case "$GPUS" in
    '' | *[!0-9]*) echo "slurm-local: COSCHED_SLURM_GPUS=$GPUS: expected a number of GPUs per node" >&2; exit 2 ;;
esac
GRES=
[ "$GPUS" -eq 0 ] || GRES="Gres=gpu:$GPUS"
HOST=$(hostname -s)
CONF=$DIR/etc/slurm.conf
SOCK=$DIR/munge/munge.socket.2
HOOK_AT=${COSCHED_SLURM_HOOK_AT:-slurmd}
SUSER=${COSCHED_SLURM_USER:-root}
# The name `cosched slurm serve --hook` listens on: one per cluster directory.
HOOK_NAME="cosched-slurm:$DIR"
# This checkout's build first: an older cosched on PATH may lack `slurm hook`.
if [ -z "${COSCHED_BIN:-}" ] && [ -x "$(dirname "$0")/../target/release/cosched" ]; then
    COSCHED_BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release/cosched
fi
COSCHED_BIN=${COSCHED_BIN:-$(command -v cosched || true)}
case "$HOOK_AT" in
    slurmd | slurmctld | none) ;;
    *) echo "slurm-local: COSCHED_SLURM_HOOK_AT=$HOOK_AT: expected slurmd, slurmctld or none" >&2; exit 2 ;;
esac
# Daemons log in UTC, as the jobs' stamps and cosched's times are read.
export TZ=UTC

say() { echo "slurm-local: $*" >&2; }
die() { say "$*"; exit 1; }

need() {
    for c in munged slurmctld slurmd sbatch squeue scontrol sacct; do
        command -v "$c" >/dev/null || die "$c not found: install Debian's slurm-wlm, slurm-client and munge (./install.sh --deps-only)"
    done
}

# A pid file's process, if it is alive.
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

env_lines() {
    echo "export SLURM_CONF=$CONF"
    # Slurm's commands find munge's socket through slurm.conf's AuthInfo.
    # `cosched slurm serve` listens where this cluster's epilog wakes it.
    echo "export COSCHED_SLURM_HOOK='$HOOK_NAME'"
}

# The epilog line of slurm.conf, after writing its script, which runs
# `cosched slurm hook`.
hook_line() {
    [ -n "$COSCHED_BIN" ] && [ "$HOOK_AT" != none ] || return 0
    {
        echo '#!/bin/sh'
        echo '# Generated by scripts/slurm-local.sh: wakes `cosched slurm serve --hook`'
        echo "# at each job's end and waits (at most 2 s) for its round. Always exits 0:"
        echo '# a failing epilog would drain the node.'
        echo "'$COSCHED_BIN' slurm hook --hook '$HOOK_NAME' --wait 2 >/dev/null 2>&1"
        echo 'exit 0'
    } >"$DIR/etc/epilog.sh"
    chmod 0755 "$DIR/etc/epilog.sh"
    case "$HOOK_AT" in
        slurmd) echo "Epilog=$DIR/etc/epilog.sh" ;;
        slurmctld) echo "EpilogSlurmctld=$DIR/etc/epilog.sh" ;;
    esac
}

# GPUs (COSCHED_SLURM_GPUS): slurm.conf's GresTypes, after writing
# gres.conf beside it. Slurm 22.05 needs a device per GPU: a gres.conf line
# of a count alone (`Name=gpu Count=2`) is dropped by slurmd ("Removing
# file-less GPU"), which then registers no GPU and slurmctld sets the node
# INVAL; a `File=` that is a plain file is refused ("not a valid character
# or block device"). So each GPU is a character device node of this
# cluster's own, $DIR/dev/gpuK, with /dev/null's numbers (1,3): what a site
# writes as File=/dev/nvidia[0-1]. task/affinity constrains no devices, so
# nothing opens them; a job sees CUDA_VISIBLE_DEVICES as on a site.
gres_lines() {
    rm -f "$DIR/etc/gres.conf"
    [ "$GPUS" -gt 0 ] || return 0
    mkdir -p "$DIR/dev"
    local k
    for k in $(seq 0 $((GPUS - 1))); do
        [ -c "$DIR/dev/gpu$k" ] || mknod "$DIR/dev/gpu$k" c 1 3 || die "mknod $DIR/dev/gpu$k: a GPU stand-in needs root and a /tmp without nodev"
    done
    local files="$DIR/dev/gpu0"
    [ "$GPUS" -eq 1 ] || files="$DIR/dev/gpu[0-$((GPUS - 1))]"
    echo "NodeName=$(node_names | paste -sd,) Name=gpu File=$files" >"$DIR/etc/gres.conf"
    echo "GresTypes=gpu"
}

# The nodes' names: this host's, or c1..cN for several slurmd.
node_names() {
    if [ "$NODES" -eq 1 ]; then echo "$HOST"; else seq -f "c%g" "$NODES"; fi
}

node_lines() {
    if [ "$NODES" -eq 1 ]; then
        echo "NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS $MEM $GRES State=UNKNOWN"
        return
    fi
    local k
    for k in $(seq "$NODES"); do
        echo "NodeName=c$k NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 1 + k)) CPUs=$CPUS $MEM $GRES State=UNKNOWN"
    done
}

write_conf() {
    mkdir -p "$DIR/etc" "$DIR/ctld" "$DIR/d" "$DIR/log" "$DIR/run" "$DIR/munge"
    if [ "$SUSER" != root ]; then
        # slurmctld drops to SlurmUser: its state, logs and pid file are its.
        chown "$SUSER" "$DIR/ctld" "$DIR/log" "$DIR/run"
        chmod 0755 "$DIR"
    fi
    # Whole-core allocation, one core per CPU as this host reports them.
    cat >"$CONF" <<EOF
# Generated by scripts/slurm-local.sh for cosched; rewritten at each start.
ClusterName=cosched-local
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=$SUSER
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/d/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MpiDefault=none
ProctrackType=proctrack/pgid
TaskPlugin=task/affinity
ReturnToService=2
# cons_tres with CR_Core: a job holds whole cores; jobs on distinct cores
# share a node (the co-location cosched decides). Memory is not a
# consumable here.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# Schedule at once when cosched releases a job, not at the next periodic
# pass: no batch delay, no minimum interval between passes. (A release is
# still only queued for slurmctld's background loop, which wakes once a
# second; the epilog below is how a release made at a job's end starts
# without it: docs/slurm.md.)
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
$(hook_line)
$(gres_lines)
# Jobs of the cosched partition are held at submission (job_submit.lua).
JobSubmitPlugins=lua
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
# Finished jobs stay visible to scontrol/squeue for 5 minutes.
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
$(node_lines)
PartitionName=cosched Nodes=$(node_names | paste -sd,) Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
# Another partition on the same nodes, which cosched does not decide for
# (scripts/slurm-scale.sh queues jobs there to show they cost it nothing).
PartitionName=other Nodes=$(node_names | paste -sd,) Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    # The one shipped rule (docs/slurm.md), as a site installs it; it reads
    # COSCHED_BIN and COSCHED_SLURM_HOOK from slurmctld's environment.
    cp "$(dirname "$0")/../dist/job_submit.lua" "$DIR/etc/job_submit.lua"
}

start_munge() {
    if alive "$DIR/run/munged.pid"; then return; fi
    if [ ! -s "$DIR/munge/munge.key" ]; then
        dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
        chmod 0400 "$DIR/munge/munge.key"
    fi
    # Others may reach munge's socket (it is world-connectable by design),
    # never read its key (0400): a SlurmUser other than root authenticates.
    if [ "$SUSER" = root ]; then chmod 0700 "$DIR/munge"; else chmod 0711 "$DIR/munge"; fi
    # --force: munged refuses to run as root without it.
    munged --force --socket="$SOCK" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
        --seed-file="$DIR/munge/munge.seed"
}

wait_for() {
    local what=$1 tries=$2; shift 2
    for _ in $(seq "$tries"); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    die "$what did not come up; see $DIR/log/"
}

start() {
    need
    if status >/dev/null 2>&1; then say "already running in $DIR"; return 0; fi
    write_conf
    start_munge
    export SLURM_CONF=$CONF
    # The submission rule wakes `serve --hook` through these (dist/job_submit.lua).
    alive "$DIR/run/slurmctld.pid" || COSCHED_BIN=${COSCHED_BIN:-} COSCHED_SLURM_HOOK=$HOOK_NAME slurmctld -f "$CONF"
    wait_for slurmctld 100 scontrol ping
    local n
    for n in $(node_names); do
        if alive "$DIR/run/slurmd-$n.pid"; then continue; fi
        if [ "$NODES" -eq 1 ]; then slurmd -f "$CONF"; else slurmd -f "$CONF" -N "$n"; fi
    done
    # Usable once every node reports idle, mixed or allocated (30 s, and a
    # second more per node: 32 slurmd on two cores take a while).
    wait_for "slurmd" $((150 + NODES * 5)) sh -c "[ \$(sinfo -h -N -p cosched -o %T | grep -Ec '^(idle|mixed|allocated)\$') -eq $NODES ]"
    say "running in $DIR (SLURM_CONF=$CONF)"
}

# SIGTERM to every pid file's process at once, then wait for all (SIGKILL
# after 5 s).
stop_pids() {
    local pids=() f
    for f in "$@"; do alive "$f" && pids+=("$(cat "$f")"); done
    [ ${#pids[@]} -gt 0 ] || return 0
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 50); do
        local left=0 p
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
        [ $left -eq 0 ] && return 0
        sleep 0.1
    done
    say "still running after SIGTERM: ${pids[*]}; killing"
    kill -KILL "${pids[@]}" 2>/dev/null || true
}

stop() {
    if [ -s "$CONF" ] && alive "$DIR/run/slurmctld.pid"; then
        # Cancel what still runs so no job process outlives the cluster.
        SLURM_CONF=$CONF scancel --partition=cosched 2>/dev/null || true
        SLURM_CONF=$CONF scancel --partition=other 2>/dev/null || true
        # slurmstepd processes of cancelled jobs end with their jobs.
        for _ in $(seq 30); do pgrep -x slurmstepd >/dev/null || break; sleep 0.1; done
    fi
    stop_pids "$DIR"/run/slurmd-*.pid "$DIR/run/slurmctld.pid"
    stop_pids "$DIR/run/munged.pid"
    rm -rf "$DIR"
    say "stopped; $DIR removed"
}

status() {
    [ -s "$CONF" ] || { echo "not running: no $CONF"; return 1; }
    local ok=0
    for p in munged slurmctld $(node_names | sed 's/^/slurmd-/'); do
        if alive "$DIR/run/$p.pid"; then echo "$p: running (pid $(cat "$DIR/run/$p.pid"))"; else echo "$p: not running"; ok=1; fi
    done
    [ $ok -eq 0 ] || return 1
    SLURM_CONF=$CONF sinfo -N -p cosched -o "%N %T %c %P"
    SLURM_CONF=$CONF squeue -o "%i %j %T %r %N %C"
}

# The controller killed and started again, recovering its saved state (a
# fault cosched must ride through).
restart_ctld() {
    [ -s "$CONF" ] || die "not running: no $CONF"
    stop_pids "$DIR/run/slurmctld.pid"
    SLURM_CONF=$CONF COSCHED_BIN=${COSCHED_BIN:-} COSCHED_SLURM_HOOK=$HOOK_NAME slurmctld -f "$CONF"
    SLURM_CONF=$CONF wait_for slurmctld 100 scontrol ping
    say "slurmctld restarted"
}

case "${1:-}" in
    start) start ;;
    restart-ctld) restart_ctld ;;
    stop) stop ;;
    status) status ;;
    env) env_lines ;;
    *) echo "usage: $0 start|stop|status|env|restart-ctld" >&2; exit 2 ;;
esac
