-- long-term: the VarySched paper's long-term strategy (VarySched). Each job is put,
-- when it first waits, into the queue of one resource, which works its
-- queue off in that fixed order (so a job's finishing time can be told in
-- advance): a resource starts the head of its queue when its cores are
-- free, and nothing passes the head. A resource is a way to run (a pool
-- and a number of cores: a variant).
--
-- The delta rule picks the resource: with l1 and l2 the lengths of the
-- queues of the job's first and second preferences and delta = solo time
-- on the second / solo time on the first, the job goes to its first
-- preference if l1 <= delta * l2; otherwise the rule is applied to its
-- second and third, and so on down to its last.
--
-- The governor masks resources: at `high` every pool is used; at `low` only
-- the CPU pools (jobs waiting for an accelerator move to their next way; a
-- job with no CPU way runs only while no CPU job runs or waits).
--
--   cosched simulate --scenario examples/scenarios/varysched.toml \
--     --policy lua:path=examples/lua/long-term.lua,governor=low

local assigned = {} -- job id -> the way (variant table, or the job) it waits for

-- A job's ways: its variants in preference order, or the job itself.
local function ways(job) return job.variants or {job} end

local function key(way) return way.pool .. "/" .. way.cores end

local function masked(view, way)
  return view.governor == "low" and view.pools[way.pool].kind ~= "cpu"
end

-- The delta rule over the ways that are not masked.
local function assign(view, job, lengths)
  local ok = {}
  for _, w in ipairs(ways(job)) do
    if not masked(view, w) then ok[#ok + 1] = w end
  end
  if #ok == 0 then return ways(job)[1] end
  for i = 1, #ok - 1 do
    local l1, l2 = lengths[key(ok[i])] or 0, lengths[key(ok[i + 1])] or 0
    local delta = ok[i + 1].solo / ok[i].solo
    if l1 <= delta * l2 then return ok[i] end
  end
  return ok[#ok]
end

local function start(job, way)
  if way.index then return {start = job.id, variant = way.index} end
  return {start = job.id}
end

function decide(view)
  -- Queue lengths: jobs assigned to each resource that wait or run.
  local lengths = {}
  local cpu_busy = false
  for _, r in ipairs(view.running) do
    if assigned[r.id] then
      local k = key(assigned[r.id])
      lengths[k] = (lengths[k] or 0) + 1
    end
    if view.pools[r.pool].kind == "cpu" then cpu_busy = true end
  end
  for _, q in ipairs(view.queue) do
    local a = assigned[q.id]
    if a == nil or masked(view, a) then
      -- New, or masked since the governor went low: the delta rule (a
      -- masked job moves only to a way that is not).
      local b = assign(view, q, lengths)
      if a == nil or not masked(view, b) then a = b; assigned[q.id] = b end
    end
    lengths[key(a)] = (lengths[key(a)] or 0) + 1
    if view.pools[a.pool].kind == "cpu" then cpu_busy = true end
  end
  local out, free, blocked = {}, {}, {}
  for p, pool in ipairs(view.pools) do free[p] = pool.free end
  for _, q in ipairs(view.queue) do
    local a = assigned[q.id]
    local k = key(a)
    local held = masked(view, a) and cpu_busy
    if not blocked[k] and not held then
      if a.cores <= free[a.pool] then
        free[a.pool] = free[a.pool] - a.cores
        out[#out + 1] = start(q, a)
      else
        blocked[k] = true
      end
    end
  end
  return out
end
