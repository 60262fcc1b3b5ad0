-- suspend-harm: co-execution that suspends the newer job of a harmful
-- pair, the Rust `react:inner=noplan,action=suspend` as one script (issue
-- 38; the interference detection the Xeon Phi study cites, which
-- suspends a co-runner as soon as harm is seen).
--
-- Harm is a running job's online slowdown estimate (`view.estimate`: the
-- engine reads the jobs' progress while they run, `cosched run` and a
-- sampled virtual node) above `threshold` with its whole interval; where an
-- engine shows no estimates at all, the job's predicted slowdown beside the
-- other running jobs (`view.slowdown`) above `threshold`. The newest running job
-- of the node is then suspended (never a job alone: there is no one to
-- blame), and resumes once every job it was suspended beside has ended or
-- been suspended, on free cores. Starts are noplan's: each pool starts the
-- first jobs of its queue while they fit in its free cores.
--
--   cosched run --workload examples/mixed.toml --policy lua:path=examples/lua/suspend-harm.lua,threshold=1.3

local threshold = params.threshold or 1.3
local seen = {}  -- job id -> the order it was first seen running in
local order = 0
local held = {}  -- job id -> the ids it was suspended beside

local sampled = false  -- whether the engine has shown any estimate yet

local function harmed(view, job, active)
  local e = view.estimate(job)
  if e then
    sampled = true
    return e.decisive and e.lo > threshold
  end
  if sampled then
    -- A new co-run, not read long enough yet.
    return false
  end
  local beside = {}
  for _, o in ipairs(active) do
    if o.id ~= job.id then beside[#beside + 1] = o end
  end
  return view.slowdown(job, beside) > threshold
end

-- Whether the cores a suspended job holds are free (or, from an engine
-- that does not name cores, whether its pool has as many free).
local function free_again(view, r, active)
  local mine = view.cpus(r)
  if not mine or #mine == 0 then
    return view.pools[r.pool].free >= r.cores
  end
  for _, o in ipairs(active) do
    if o.pool == r.pool then
      for _, c in ipairs(view.cpus(o) or {}) do
        for _, m in ipairs(mine) do
          if c == m then return false end
        end
      end
    end
  end
  return true
end

function decide(view)
  local active = {}
  for _, r in ipairs(view.running) do
    if not seen[r.id] then
      order = order + 1
      seen[r.id] = order
    end
    if not r.suspended then active[#active + 1] = r end
  end

  -- A job suspended for harm resumes once those it hurt are gone, on its
  -- cores if they are free (all such jobs at once, on this view).
  local resumes = {}
  for _, r in ipairs(view.running) do
    local beside = held[r.id]
    if r.suspended and beside then
      local still = false
      for _, o in ipairs(active) do
        for _, b in ipairs(beside) do
          if b == o.id then still = true end
        end
      end
      if not still and free_again(view, r, active) then
        resumes[#resumes + 1] = {resume = r.id}
      end
    end
  end
  if #resumes > 0 then
    for _, d in ipairs(resumes) do held[d.resume] = nil end
    return resumes
  end

  if #active >= 2 then
    for _, r in ipairs(active) do
      if harmed(view, r, active) then
        local newest = active[1]
        for _, o in ipairs(active) do
          if seen[o.id] > seen[newest.id] then newest = o end
        end
        local beside = {}
        for _, o in ipairs(active) do
          if o.id ~= newest.id then beside[#beside + 1] = o.id end
        end
        held[newest.id] = beside
        return {{suspend = newest.id}}
      end
    end
  end

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
