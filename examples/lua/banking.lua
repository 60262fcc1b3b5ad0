-- banking: seed 003(f)'s banking-based strategy (VarySched). A bank of
-- credits starts full at 100; every 5 s it gains 15 credits at governor
-- `high` and 10 at `low`, up to 100. Starting a job costs what its
-- resource costs: 10 on an accelerator pool, 5 for all cores of a CPU pool,
-- 1 for one core. Jobs start in queue order while the bank bears them and
-- their cores are free; a job the bank cannot bear waits in the queue.
--
-- cosched decides when something happens (a job arrives or ends), not on a
-- timer: when nothing runs and the bank cannot bear any waiting job, the
-- head of the queue starts on credit (the bank goes below zero and refills
-- as before), where VarySched would wait for the next refill.
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

local function kind(view, job)
  local pool = view.pools[job.pool]
  if pool.kind ~= "cpu" then return "accelerator" end
  if job.cores >= pool.cores and pool.cores > 1 then return "all" end
  return "one"
end

function decide(view)
  local steps = math.floor((view.time - refilled) / period)
  if steps > 0 then
    credits = math.min(max, credits + steps * refill[view.governor])
    refilled = refilled + steps * period
  end
  local out = {}
  local free = {}
  for p, pool in ipairs(view.pools) do free[p] = pool.free end
  for _, job in ipairs(view.queue) do
    local c = cost[kind(view, job)]
    if job.cores <= free[job.pool] and c <= credits then
      free[job.pool] = free[job.pool] - job.cores
      credits = credits - c
      out[#out + 1] = {start = job.id}
    end
  end
  if #out == 0 and #view.running == 0 and view.queue[1] then
    local job = view.queue[1]
    credits = credits - cost[kind(view, job)]
    out[1] = {start = job.id}
  end
  return out
end
