-- banking: the VarySched paper's banking-based strategy (VarySched). A bank of
-- credits starts full at 100; every 5 s it gains 15 credits at governor
-- `high` and 10 at `low`, up to 100. Starting a job costs what its
-- resource costs: 10 on an accelerator pool, 5 for all cores of a CPU pool,
-- 1 for one core. Jobs are taken in queue order; each starts as its most
-- preferred variant whose cores are free and whose cost the bank bears,
-- else it waits in the queue. So when the credits run low, jobs start on
-- the cheap (slow) resources.
--
-- While jobs wait, the script asks to be woken at the next refill (the
-- global `wake_at`), as VarySched's periodic tick would.
--
-- Parameters (key=value in the spec): max, period, high, low, accelerator,
-- all, one.
--
--   cosched simulate --scenario examples/scenarios/varysched.toml \
--     --policy lua:path=examples/lua/banking.lua,governor=low

local max = params.max or 100
local period = params.period or 5
local refill = {high = params.high or 15, low = params.low or 10}
local cost = {accelerator = params.accelerator or 10, all = params.all or 5, one = params.one or 1}

local credits = max
local refilled = 0 -- time of the last refill

-- A job's ways: its variants in preference order, or the job itself.
local function ways(job) return job.variants or {job} end

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
  local steps = math.floor((view.time - refilled) / period)
  if steps > 0 then
    credits = math.min(max, credits + steps * refill[view.governor])
    refilled = refilled + steps * period
  end
  local out, free, taken = {}, {}, 0
  for p, pool in ipairs(view.pools) do free[p] = pool.free end
  for _, job in ipairs(view.queue) do
    for _, way in ipairs(ways(job)) do
      local c = cost[kind(view, way)]
      if way.cores <= free[way.pool] and c <= credits then
        free[way.pool] = free[way.pool] - way.cores
        credits = credits - c
        out[#out + 1] = start(job, way)
        taken = taken + 1
        break
      end
    end
  end
  -- Jobs left waiting while the bank is not full: look again at the next refill.
  if #view.queue > taken and credits < max then wake_at = refilled + period else wake_at = nil end
  return out
end
