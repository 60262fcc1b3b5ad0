-- constraint: seed 003(f)'s constraint-based strategy (VarySched). Every
-- running job holds credits by the resource it uses: 9 on an accelerator
-- pool, 6 for all cores of a CPU pool, 3 for one core. The credits of the
-- running jobs never exceed the limit: 18 at governor `high`, 9 at `low`.
-- Jobs start in queue order while their cores are free and the limit
-- allows; a job that does not fit waits and later ones may pass it.
--
-- Parameters (key=value in the spec): high, low, accelerator, all, one.
--
--   cosched simulate --scenario examples/scenarios/varysched.toml \
--     --policy lua:path=examples/lua/constraint.lua,governor=low

local limit = {high = params.high or 18, low = params.low or 9}
local cost = {accelerator = params.accelerator or 9, all = params.all or 6, one = params.one or 3}

local function kind(view, job)
  local pool = view.pools[job.pool]
  if pool.kind ~= "cpu" then return "accelerator" end
  if job.cores >= pool.cores and pool.cores > 1 then return "all" end
  return "one"
end

function decide(view)
  local used = 0
  for _, r in ipairs(view.running) do used = used + cost[kind(view, r)] end
  local out = {}
  local free = {}
  for p, pool in ipairs(view.pools) do free[p] = pool.free end
  for _, job in ipairs(view.queue) do
    local c = cost[kind(view, job)]
    if job.cores <= free[job.pool] and used + c <= limit[view.governor] then
      free[job.pool] = free[job.pool] - job.cores
      used = used + c
      out[#out + 1] = {start = job.id}
    end
  end
  return out
end
