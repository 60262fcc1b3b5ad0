-- short-term: seed 003(f)'s short-term strategy (VarySched). It keeps every
-- resource busy: each free core takes the first waiting job of its pool
-- that fits, passing over jobs that need more cores than are free. It does
-- not read the resource governor.
--
-- VarySched's jobs carry variants (one per resource) and this strategy
-- picks, for a free resource, the first job that prefers it most; cosched's
-- jobs run on one pool each (job variants are not implemented), so the
-- choice here is of the job only.
--
--   cosched simulate --scenario examples/scenarios/varysched.toml --policy lua:path=examples/lua/short-term.lua

function decide(view)
  local out = {}
  local free = {}
  for p, pool in ipairs(view.pools) do free[p] = pool.free end
  for _, job in ipairs(view.queue) do
    if job.cores <= free[job.pool] then
      free[job.pool] = free[job.pool] - job.cores
      out[#out + 1] = {start = job.id}
    end
  end
  return out
end
