-- long-term: seed 003(f)'s long-term strategy (VarySched). Each resource
-- works off its own queue in a fixed order, so a job's finishing time can
-- be told in advance: a pool starts the head of its queue when it fits and
-- otherwise waits (nothing passes it). The governor masks resources: at
-- `high` every pool is used; at `low` only the CPU pools, and an
-- accelerator pool starts a job only while no CPU job runs or waits (its
-- jobs have no CPU variant to move to: job variants are not implemented,
-- so the seed's delta rule, which moves a job to its next-preferred
-- resource when its first choice's queue is long, has nothing to choose).
--
--   cosched simulate --scenario examples/scenarios/varysched.toml \
--     --policy lua:path=examples/lua/long-term.lua,governor=low

function decide(view)
  local cpu_busy = false
  for _, r in ipairs(view.running) do
    if view.pools[r.pool].kind == "cpu" then cpu_busy = true end
  end
  for _, q in ipairs(view.queue) do
    if view.pools[q.pool].kind == "cpu" then cpu_busy = true end
  end
  local out = {}
  for p, pool in ipairs(view.pools) do
    local masked = view.governor == "low" and pool.kind ~= "cpu" and cpu_busy
    if not masked then
      local free = pool.free
      for _, job in ipairs(view.queue) do
        if job.pool == p then
          if job.cores > free then break end
          free = free - job.cores
          out[#out + 1] = {start = job.id}
        end
      end
    end
  end
  return out
end
