#!/bin/sh
# The inter-VM paper's comparison (COSH 2016 (e)): communication between two
# guests of one host over the host's network path against communication
# through shared memory. On this node two network namespaces joined by a
# veth pair are the two guests: each MPI rank of examples/mpi/comm runs in
# its own namespace and the ranks talk over TCP through the veth pair (Open
# MPI's tcp BTL), against both ranks in one namespace talking through shared
# memory (the vader BTL) and, between the two, over TCP on the loopback.
# Prints, per message size, the ping-pong's time per round trip and
# bandwidth for each path, and the veth path's time over shared memory's;
# then the same for the allreduce collective.
#
#   scripts/mpi-veth.sh [OUT_DIR]             # 200 ping-pongs / 100 allreduces a size
#   ITERS=50 scripts/mpi-veth.sh /tmp/veth    # quicker, rougher
#
# Needs root (ip netns, ip link), iproute2, Open MPI (openmpi-bin,
# libopenmpi-dev; ./install.sh installs them) and python3. The namespaces and
# the veth pair are named after this script's process id and removed on exit,
# Ctrl-C included. Each rank runs on a core of its own (the node has two).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
out="${1:-mpi-veth-out}"
iters="${ITERS:-200}"
if [ "$(id -u)" != 0 ]; then
    echo "scripts/mpi-veth.sh: needs root for ip netns and the veth pair" >&2
    exit 2
fi
for tool in ip mpirun python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "scripts/mpi-veth.sh: $tool not found" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$repo/examples/mpi/build.sh" "$out/bin" >/dev/null
comm="$out/bin/comm"

a="cosched-a-$$" b="cosched-b-$$"
va="vcsa$$" vb="vcsb$$"
net=10.213.7
cleanup() {
    ip netns del "$a" 2>/dev/null || true
    ip netns del "$b" 2>/dev/null || true
    ip link del "$va" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ip netns add "$a"
ip netns add "$b"
ip link add "$va" type veth peer name "$vb"
ip link set "$va" netns "$a"
ip link set "$vb" netns "$b"
ip -n "$a" addr add "$net.1/24" dev "$va"
ip -n "$b" addr add "$net.2/24" dev "$vb"
for n in "$a" "$b"; do ip -n "$n" link set lo up; done
ip -n "$a" link set "$va" up
ip -n "$b" link set "$vb" up

# Open MPI launches a daemon on each "host" through its launch agent (ssh on
# a cluster); this one starts it in the guest's namespace instead. Each
# daemon then serves its rank locally (PMIx over that namespace's
# loopback), and the daemons and ranks reach each other over the veth pair
# only, as two guests' would over the host's virtual network.
agent="$out/netns-agent"
cat > "$agent" <<AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case "\$host" in vma) ns=$a cpu=0 ;; vmb) ns=$b cpu=1 ;; *) echo "netns-agent: unknown host \$host" >&2; exit 2 ;; esac
exec ip netns exec "\$ns" taskset -c "\$cpu" sh -c "\$*"
AGENT
chmod +x "$agent"
# rtc_hwloc_vmhole none: the daemons do not map hwloc's topology into a
# shared "hole" of their address space; on this VM that write segfaulted
# orted now and then (hwloc_shmem_topology_write), which the ranks never need.
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to core --mca pml ob1 --mca rtc_hwloc_vmhole none"
echo "== $(date -u +%H:%M:%S) load: $(cat /proc/loadavg)" | tee "$out/load.log"
for mode in pingpong allreduce; do
    n=$iters
    [ "$mode" = allreduce ] && n=$((iters / 2))
    # Both ranks in one namespace, shared memory.
    $mpi -np 2 --mca btl self,vader "$comm" "$mode" "$n" > "$out/$mode-shm.txt"
    # Both ranks in one namespace, TCP over the loopback.
    $mpi -np 2 --mca btl self,tcp --mca btl_tcp_if_include lo "$comm" "$mode" "$n" > "$out/$mode-loopback.txt"
    # One rank in each namespace, TCP over the veth pair: the guests.
    # Each guest's daemon sees the whole node and would bind its one rank
    # to core 0, so the agent pins each guest to a core of its own (as a
    # guest's vCPU is pinned) and the ranks are left unbound inside.
    ip netns exec "$a" $mpi --bind-to none --host vma,vmb -np 2 --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include "$net.0/24" \
        --mca btl self,tcp --mca btl_tcp_if_include "$net.0/24" "$comm" "$mode" "$n" > "$out/$mode-veth.txt"
done
echo "== $(date -u +%H:%M:%S) load: $(cat /proc/loadavg)" | tee -a "$out/load.log"

python3 - "$out" <<'PY'
import sys
out = sys.argv[1]
def read(path):
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) == 6 and f[0] == "size_kib":
            rows[int(f[1])] = (float(f[3]), float(f[5]))
    return rows
for mode, what in [("pingpong", "ping-pong (us per round trip)"), ("allreduce", "allreduce (us per call)")]:
    paths = {p: read(f"{out}/{mode}-{p}.txt") for p in ["shm", "loopback", "veth"]}
    print(f"\n{mode}: {what} and MB/s, two ranks, one core each\n")
    print("| message | shared memory | TCP loopback, one namespace | TCP over veth, two namespaces | veth / shared memory |")
    print("|---|---|---|---|---|")
    for kib in sorted(paths["shm"]):
        cells = []
        for p in ["shm", "loopback", "veth"]:
            us, mbs = paths[p].get(kib, (float("nan"), float("nan")))
            cells.append(f"{us:.1f} us, {mbs:.0f} MB/s")
        ratio = paths["veth"].get(kib, (float("nan"),))[0] / paths["shm"][kib][0]
        size = f"{kib} KiB" if kib < 1024 else f"{kib // 1024} MiB"
        print(f"| {size} | " + " | ".join(cells) + f" | {ratio:.1f}x |")
PY
