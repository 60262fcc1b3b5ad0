# Issue 36, bounded everything: pid cap per job, Lua memory and script
# files, SWF input size, floors on quanta and wake-ups.
echo "== bounds: pids, Lua memory and scripts, SWF size, quanta and wake-ups"

bad=$(wl pids0 '[[jobs]]
name = "a"
command = "true"
pids = 0')
check "workload pids = 0: refused" 2 "$(rc $C check "$bad")"
check "  names file:line:col" yes "$(has "pids0.toml:4:8:")"
if [ $root = 1 ] && { [ -d /sys/fs/cgroup/pids ] || grep -qw pids /sys/fs/cgroup/cgroup.controllers 2>/dev/null; }; then
    bomb=$(wl bomb '[[pools]]
name = "host"
cores = 1
[[jobs]]
name = "bomb"
command = ["sh", "-c", "i=0; while [ $i -lt 400 ]; do sleep 6661.5 & i=$((i+1)); done; wait"]
pids = 32
timeout = 60.0
[[jobs]]
name = "next"
command = "true"
after = ["bomb"]')
    check "fork bomb past pids = 32: the run ends, a job not ok" 1 "$(rc $C run --workload "$bomb" --policy exclusive --solo stored)"
    check "  bomb reported failed" yes "$(has "job \`bomb\` in run [0-9]* (exclusive repeat 1): failed")"
    check "  the next job ran ok" no "$(has "job \`next\`")"
    check "  no sleeper of the bomb left" 0 "$(pgrep -f 'sleep 6661.5' | wc -l)"
else
    skip "fork bomb held at its pids cap" "needs root and a pids controller"
fi

printf 'hoard = {}\nfunction decide(view)\n  for i = 1, 1e9 do hoard[i] = string.rep("x", 100) .. i end\nend\n' >"$W/hog.lua"
check "Lua script past memory_mib=8: the run ends" 0 "$(rc $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --policy "lua:path=$W/hog.lua,memory_mib=8,budget=1000000000")"
check "  memory limit named" yes "$(grep -q "memory limit of 8 MiB exceeded" "$W/out" "$W/err" && echo yes || echo no)"
rm -f "$W/fifo.lua"; mkfifo "$W/fifo.lua"
check "Lua script that is a FIFO: refused, no hang" 2 "$(rc timeout 20 $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --policy "lua:path=$W/fifo.lua")"
check "Lua script /dev/zero: refused" 2 "$(rc timeout 20 $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --policy "lua:path=/dev/zero")"
printf 'function decide(view)\n  wake_at = view.time + 1e-12\n  if #view.running == 0 and #view.queue > 0 then return {{start = view.queue[1].id}} end\n  return {}\nend\n' >"$W/eager.lua"
check "Lua wake_at = now + 1e-12: the simulation ends" 0 "$(rc timeout 120 $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --policy "lua:path=$W/eager.lua")"
check "timeshare:quantum=1e-9: refused" 2 "$(rc $C simulate --scenario examples/scenarios/seed000.toml --orders 1 --policy timeshare:quantum=1e-9)"

if command -v gzip >/dev/null; then
    head -c 1048576 /dev/zero | gzip -1 >"$W/m.gz"
    for i in 1 2 3 4 5 6 7 8; do cat "$W/m.gz"; done >"$W/bomb.swf.gz"
    check "SWF gzip bomb past COSCHED_SWF_MAX_MIB=4: refused" 2 "$(COSCHED_SWF_MAX_MIB=4 rc $C simulate --swf "$W/bomb.swf.gz")"
    check "  names the file and the bound" yes "$(has "bomb.swf.gz: inflates to over 4 MiB of text")"
else
    skip "SWF gzip bomb" "no gzip"
fi
truncate -s 3G "$W/huge.swf"
check "SWF file of 3 GiB (sparse): refused unread" 2 "$(rc $C simulate --swf "$W/huge.swf")"
check "  names the bound" yes "$(has "over 256 MiB of file")"
rm -f "$W/huge.swf"
