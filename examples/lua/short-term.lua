-- short-term: the VarySched paper's short-term strategy (VarySched). It keeps every
-- resource busy: a free resource takes the first waiting job that prefers
-- it most; failing that, the first whose second preference it is, and so
-- on. A job's preferences are its variants in order (a job without
-- variants has one way, its own). It does not read the resource governor.
--
--   cosched simulate --scenario examples/scenarios/varysched.toml --policy lua:path=examples/lua/short-term.lua

-- A job's ways: its variants in preference order, or the job itself.
local function ways(job) return job.variants or {job} end

local function start(job, way)
  if way.index then return {start = job.id, variant = way.index} end
  return {start = job.id}
end

function decide(view)
  local out, free, taken = {}, {}, {}
  for p, pool in ipairs(view.pools) do free[p] = pool.free end
  -- Rank by rank: every job's first preference, then every job's second...
  local rank, more = 1, true
  while more do
    more = false
    for _, job in ipairs(view.queue) do
      local way = ways(job)[rank]
      if way and not taken[job.id] then
        more = true
        if way.cores <= free[way.pool] then
          free[way.pool] = free[way.pool] - way.cores
          taken[job.id] = true
          out[#out + 1] = start(job, way)
        end
      end
    end
    rank = rank + 1
  end
  return out
end
