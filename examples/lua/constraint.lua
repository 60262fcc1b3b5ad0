-- constraint: the VarySched paper's constraint-based strategy (VarySched). Every
-- running job holds credits by the resource it uses: 9 on an accelerator
-- pool, 6 for all cores of a CPU pool, 3 for one core. The credits of the
-- running jobs never exceed the limit: 18 at governor `high`, 9 at `low`.
-- Jobs are taken in queue order; each starts as its most preferred variant
-- whose cores are free and whose credits the limit still allows, or waits
-- (later jobs may pass it).
--
-- Parameters (key=value in the spec): high, low, accelerator, all, one.
--
--   cosched simulate --scenario examples/scenarios/varysched.toml \
--     --policy lua:path=examples/lua/constraint.lua,governor=low

local limit = {high = params.high or 18, low = params.low or 9}
local cost = {accelerator = params.accelerator or 9, all = params.all or 6, one = params.one or 3}

-- A job's ways: its variants in preference order, or the job itself.
local function ways(job) return job.variants or {job} end

-- What a way (or a running job) costs: by its pool's kind and its cores.
local function kind(view, way)
  local pool = view.pools[way.pool]
  if pool.kind ~= "cpu" then return "accelerator" end
  if way.cores >= pool.cores and pool.cores > 1 then return "all" end
  return "one"
end

local function start(job, way)
  if way.index then return {start = job.id, variant = way.index} end
  return {start = job.id}
end

function decide(view)
  local used = 0
  for _, r in ipairs(view.running) do used = used + cost[kind(view, r)] end
  local out, free = {}, {}
  for p, pool in ipairs(view.pools) do free[p] = pool.free end
  local lim = limit[view.governor]
  for _, job in ipairs(view.queue) do
    for _, way in ipairs(ways(job)) do
      local c = cost[kind(view, way)]
      if way.cores <= free[way.pool] and used + c <= lim then
        free[way.pool] = free[way.pool] - way.cores
        used = used + c
        out[#out + 1] = start(job, way)
        break
      end
    end
  end
  return out
end
