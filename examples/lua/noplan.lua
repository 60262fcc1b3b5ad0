-- noplan: unconditional co-execution, the Rust `noplan` policy as a script.
--
-- Each pool, in order, starts the first jobs of its queue while they fit in
-- its free cores; the first job that does not fit makes the pool wait (only
-- conflicts may reorder a queue, never core counts).
--
--   cosched simulate --scenario examples/scenarios/seed000.toml --policy lua:path=examples/lua/noplan.lua

function decide(view)
  local out = {}
  local taken = {}
  for p, pool in ipairs(view.pools) do
    local free = pool.free
    for _, job in ipairs(view.queue) do
      if job.pool == p and not taken[job.id] then
        if job.cores > free then break end
        free = free - job.cores
        taken[job.id] = true
        out[#out + 1] = {start = job.id}
      end
    end
  end
  return out
end
