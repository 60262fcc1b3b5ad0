# Policy specs (issue 43): one parser for every verb; placement=NAME is a
# key of the spec everywhere, refused with exit 2 where nothing is placed.
echo "== policy specs: one parser, placement as a key"
s=examples/scenarios/seed000.toml
x=examples/scenarios/xeon-2s-smt.toml
check "simulate --policy placement=scatter on a topology" 0 "$(rc $C simulate --scenario $x --orders 3 --policy noplan:placement=scatter --json)"
check "  its label reads 'noplan @ scatter'" yes "$(grep -q 'noplan @ scatter' "$W/out" && echo yes || echo no)"
check "simulate --policy placement=scatter, no topology -> 2" 2 "$(rc $C simulate --scenario $s --orders 3 --policy noplan:placement=scatter)"
check "  names the spec" yes "$(has 'noplan:placement=scatter')"
check "simulate --policy placement=everywhere -> 2" 2 "$(rc $C simulate --scenario $x --orders 3 --policy noplan:placement=everywhere)"
check "  names the bad key" yes "$(has 'placement=everywhere')"
check "simulate own placement beside a --placement sweep -> 2" 2 "$(rc $C simulate --scenario $x --orders 3 --policy noplan:placement=scatter --placement compact,scatter)"
check "simulate --policy threshold given twice -> 2" 2 "$(rc $C simulate --scenario $s --orders 3 --policy conflict-aware:threshold=1,threshold=2)"
check "  names the key" yes "$(has '`threshold` is given twice')"
check "simulate --swf with a placement -> 2" 2 "$(rc $C simulate --swf examples/traces/small.swf --policy noplan:placement=compact)"
check "  says the cluster replay places nothing" yes "$(has "places no starts on a node.s topology")"
pw=$(wl specw '[[pools]]
name = "host"
cores = 2
[[jobs]]
name = "a"
command = "sh -c '"'"'sleep 0.1'"'"'"
[[jobs]]
name = "b"
command = "sh -c '"'"'sleep 0.1'"'"'"')
check "evaluate compares two placements as two policies" 0 "$(rc $C evaluate --workload "$pw" --baseline noplan:placement=compact --policy noplan:placement=scatter --min-orders 1 --max-orders 1 --oracle-replays 0 --json)"
check "  labelled by their placement" yes "$(grep -q '"noplan:placement=scatter"' "$W/out" && echo yes || echo no)"
check "evaluate --policy placement=everywhere -> 2" 2 "$(rc $C evaluate --workload "$pw" --policy noplan:placement=everywhere)"
check "slurm serve with a placement -> 2 (Slurm binds cores itself)" 2 "$(rc $C slurm serve --policy noplan:placement=compact)"
check "  names the key" yes "$(has 'placement=compact: this engine places no starts')"
