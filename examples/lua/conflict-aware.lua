-- conflict-aware: the SX-Aurora paper's threshold strategy, the Rust `conflict-aware`
-- policy (idle=always) as a script. It gives the same schedule as
--   cosched simulate --policy conflict-aware:threshold=T
-- (crates/lua/tests/equivalence.rs checks 1,000 orders of the SX-Aurora paper's scenario).
--
-- An idle pool starts the first job of its queue whose conflict score with
-- every job on the node is within the threshold; if that job does not fit,
-- the pool waits. When the whole node is idle and the heads of the pool
-- queues conflict, the head of the longer queue starts alone.
--
--   cosched simulate --scenario examples/scenarios/seed000.toml \
--     --policy lua:path=examples/lua/conflict-aware.lua,threshold=100
--
-- Written for speed, since `cosched bench simulate` holds it to the Rust
-- policy's: numeric loops rather than ipairs (a function call per step),
-- the view's fields in locals, the threshold test inline, and no table
-- made per decision: the scratch tables and the decision tables are kept
-- from call to call, since cosched reads a decision's answer before it
-- asks again. Nor is a function called to empty them: `on` and `out` are
-- read only up to their counts (`out` ends at the nil after its last
-- decision, where cosched stops reading), and `taken` marks a job with
-- this call's number, so last call's marks mean nothing.

-- Parameters of the spec other than path, budget, fallback, governor and
-- grant arrive in `params`; `threshold=inf` arrives as math.huge.
local threshold = params.threshold or 100
-- The SX-Aurora paper's rule: a pair is within when its score is at most the
-- threshold. At an infinite threshold even a broken (NaN) score is
-- accepted, so that inf means noplan whatever the source says.
local always = threshold == math.huge

-- Jobs on the node (running, then started by this decision), the call
-- that started each id (`call`), the decisions (`nout` of them), the heads
-- of the pool queues, and the decision tables handed out so far
-- ({start = id}, rewritten on reuse).
local on, taken, out, heads, starts = {}, {}, {}, {}, {}
local call, nout = 0, 0

-- Appends {start = id} to `out`.
local function start(id)
  nout = nout + 1
  local d = starts[nout]
  if d == nil then d = {}; starts[nout] = d end
  d.start = id
  out[nout] = d
end

function decide(view)
  local queue, pools, score = view.queue, view.pools, view.score
  local nq = #queue
  local running = view.running
  local non = #running
  call = call + 1; nout = 0
  for i = 1, non do on[i] = running[i] end

  if non == 0 then
    local nh = 0
    for p = 1, #pools do
      for i = 1, nq do
        local q = queue[i]
        if q.pool == p then nh = nh + 1; heads[nh] = q; break end
      end
    end
    local conflict = false
    if not always then
      for i = 1, nh do
        for j = i + 1, nh do
          if not (score(heads[i].id, heads[j].id) <= threshold) then conflict = true end
        end
      end
    end
    if conflict then
      -- The head of the longer queue; the first pool's on a tie.
      local best, most = nil, -1
      for i = 1, nh do
        local h, n = heads[i], 0
        for k = 1, nq do
          if queue[k].pool == h.pool then n = n + 1 end
        end
        if n > most then best, most = h, n end
      end
      non = non + 1; on[non] = best; taken[best.id] = call
      start(best.id)
    end
  end

  for p = 1, #pools do
    local cores = pools[p].cores
    while true do
      local used = 0
      for i = 1, non do
        local o = on[i]
        if o.pool == p then used = used + o.cores end
      end
      local free = cores - used
      if free <= 0 then break end
      -- The first job of the pool's queue within the threshold of every job on the node.
      local pick
      for i = 1, nq do
        local q = queue[i]
        if q.pool == p and taken[q.id] ~= call then
          local ok, id = true, q.id
          if not always then
            for k = 1, non do
              if not (score(id, on[k].id) <= threshold) then ok = false; break end
            end
          end
          if ok then pick = q; break end
        end
      end
      if pick and pick.cores <= free then
        non = non + 1; on[non] = pick; taken[pick.id] = call
        start(pick.id)
      else
        break
      end
    end
  end
  out[nout + 1] = nil
  return out
end
