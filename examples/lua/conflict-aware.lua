-- conflict-aware: seed 000's threshold strategy, the Rust `conflict-aware`
-- policy (idle=always) as a script. It gives the same schedule as
--   cosched simulate --policy conflict-aware:threshold=T
-- (crates/lua/tests/equivalence.rs checks 1,000 orders of seed 000's scenario).
--
-- An idle pool starts the first job of its queue whose conflict score with
-- every job on the node is within the threshold; if that job does not fit,
-- the pool waits. When the whole node is idle and the heads of the pool
-- queues conflict, the head of the longer queue starts alone.
--
--   cosched simulate --scenario examples/scenarios/seed000.toml \
--     --policy lua:path=examples/lua/conflict-aware.lua,threshold=100

-- Parameters of the spec other than path, budget, fallback, governor and
-- grant arrive in `params`; `threshold=inf` arrives as math.huge.
local threshold = params.threshold or 100

-- Seed 000's rule. At an infinite threshold even a broken (NaN) score is
-- accepted, so that inf means noplan whatever the source says.
local function within(view, a, b)
  return threshold == math.huge or view.score(a, b) <= threshold
end

local function start(job, on, taken, out)
  on[#on + 1] = job
  taken[job.id] = true
  out[#out + 1] = {start = job.id}
end

function decide(view)
  local on = {}     -- jobs on the node: running, then started by this decision
  local taken = {}  -- ids started by this decision
  local out = {}
  for _, r in ipairs(view.running) do on[#on + 1] = r end

  if #on == 0 then
    local heads = {}
    for p = 1, #view.pools do
      for _, q in ipairs(view.queue) do
        if q.pool == p then heads[#heads + 1] = q; break end
      end
    end
    local conflict = false
    for i = 1, #heads do
      for j = i + 1, #heads do
        if not within(view, heads[i].id, heads[j].id) then conflict = true end
      end
    end
    if conflict then
      -- The head of the longer queue; the first pool's on a tie.
      local best, most = nil, -1
      for _, h in ipairs(heads) do
        local n = 0
        for _, q in ipairs(view.queue) do
          if q.pool == h.pool then n = n + 1 end
        end
        if n > most then best, most = h, n end
      end
      start(best, on, taken, out)
    end
  end

  for p, pool in ipairs(view.pools) do
    while true do
      local used = 0
      for _, o in ipairs(on) do
        if o.pool == p then used = used + o.cores end
      end
      local free = pool.cores - used
      if free <= 0 then break end
      local pick
      for _, q in ipairs(view.queue) do
        if q.pool == p and not taken[q.id] then
          local ok = true
          for _, o in ipairs(on) do
            if not within(view, q.id, o.id) then ok = false; break end
          end
          if ok then pick = q; break end
        end
      end
      if pick and pick.cores <= free then start(pick, on, taken, out) else break end
    end
  end
  return out
end
