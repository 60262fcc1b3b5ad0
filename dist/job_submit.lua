-- cosched's submission rule for slurmctld (JobSubmitPlugins=lua): the one
-- file docs/slurm.md installs, scripts/slurm-local.sh copies and the tests
-- run. Install it as job_submit.lua beside slurm.conf; slurmctld reloads it
-- when it changes.
--
-- Jobs of the cosched partition wait, held (priority 0), until `cosched
-- slurm serve` decides where they start. The AdminComment marks the hold as
-- cosched's: only administrators can change it, and cosched holds a marked
-- job again if anyone else releases it:
--
--   cosched;held                  the job's program is its comment or name
--   cosched;held;program=NAME     the batch script has a `#COSCHED program=NAME`
--                                 line (NAME: letters, digits, . _ - +, at most
--                                 64), which users keep even when they set
--                                 their own --comment and --job-name
--
-- A held job also wakes serve at once instead of at its next poll: the rule
-- starts `cosched slurm hook --submitted` in the background (`&`, output to
-- /dev/null) and returns. slurmctld runs this rule under its job write lock,
-- so it must never wait: the shell returns as soon as it has forked the hook,
-- and the hook only sends one datagram without waiting for an answer. At
-- most one wake per second: a burst of submissions is read by the round the
-- first one starts, or by the next poll.
--
-- Settings (slurmctld's environment, else these defaults):
--   COSCHED_PARTITION    the partition cosched decides for (default cosched)
--   COSCHED_BIN          the cosched binary (default /usr/local/bin/cosched;
--                        missing or not executable: no wake, serve polls)
--   COSCHED_SLURM_HOOK   the name `serve --hook` listens on (default cosched-slurm)
--   COSCHED_OPERATORS    users besides root and SlurmUser who may release a
--                        job cosched holds (names or uids, comma-separated):
--                        the user serve runs as, if a Slurm operator

local PARTITION = os.getenv("COSCHED_PARTITION") or "cosched"
local BIN = os.getenv("COSCHED_BIN") or "/usr/local/bin/cosched"
local HOOK = os.getenv("COSCHED_SLURM_HOOK") or "cosched-slurm"

local last_wake = 0

-- The partition a job asked for is ours: by name, or by default (no
-- partition asked, and ours is the cluster's default).
local function ours(job_desc, part_list)
    local p = job_desc.partition
    if p == nil then
        for _, part in pairs(part_list or {}) do
            if part.name == PARTITION and part.flag_default == 1 then
                return true
            end
        end
        return false
    end
    for name in string.gmatch(p, "[^,]+") do
        if name == PARTITION then
            return true
        end
    end
    return false
end

-- NAME of the first `#COSCHED program=NAME` line of the batch script, if
-- well formed; anything else is ignored (the job is still held).
local function program(script)
    if script == nil then
        return nil
    end
    for line in string.gmatch(script, "[^\n]+") do
        local name = string.match(line, "^#COSCHED%s+program=([%w%._%-%+]+)%s*$")
        if name ~= nil and #name <= 64 then
            return name
        end
    end
    return nil
end

-- Only characters a shell word can hold unquoted reach os.execute.
local function safe(s)
    return string.match(s, "^[%w%._%-%+/:]+$") ~= nil
end

local function wake()
    local now = os.time()
    if now == last_wake or not safe(BIN) or not safe(HOOK) then
        return
    end
    last_wake = now
    local f = io.open(BIN, "r")
    if f == nil then
        return
    end
    f:close()
    os.execute(BIN .. " slurm hook --submitted --hook " .. HOOK .. " >/dev/null 2>&1 </dev/null &")
end

function slurm_job_submit(job_desc, part_list, submit_uid)
    if ours(job_desc, part_list) then
        job_desc.priority = 0
        local name = program(job_desc.script)
        if name ~= nil then
            job_desc.admin_comment = "cosched;held;program=" .. name
        else
            job_desc.admin_comment = "cosched;held"
        end
        wake()
    end
    return slurm.SUCCESS
end

-- Who may lift cosched's hold: root, the user slurmctld runs as (SlurmUser:
-- the uid of this very process), and the users COSCHED_OPERATORS names
-- (comma-separated names or uids: the user `cosched slurm serve` runs as,
-- when it is a Slurm operator rather than SlurmUser).
local function own_uid()
    local f = io.open("/proc/self/status", "r")
    if f == nil then
        return nil
    end
    local text = f:read("*a")
    f:close()
    return tonumber(string.match(text, "\nUid:%s+%d+%s+(%d+)"))
end

local function uid_of(name)
    if string.match(name, "^%d+$") then
        return tonumber(name)
    end
    local f = io.open("/etc/passwd", "r")
    if f == nil then
        return nil
    end
    for line in f:lines() do
        local user, uid = string.match(line, "^([^:]*):[^:]*:(%d+):")
        if user == name then
            f:close()
            return tonumber(uid)
        end
    end
    f:close()
    return nil
end

local MAY_RELEASE = { [0] = true }
do
    local me = own_uid()
    if me ~= nil then
        MAY_RELEASE[me] = true
    end
    for name in string.gmatch(os.getenv("COSCHED_OPERATORS") or "", "[^,%s]+") do
        local uid = uid_of(name)
        if uid ~= nil then
            MAY_RELEASE[uid] = true
        else
            slurm.log_error("cosched job_submit.lua: COSCHED_OPERATORS names `%s`, no such user", name)
        end
    end
end

-- cosched's hold: the submission rule's mark, or a job cosched parked on a
-- node (its signed decision with `act=park`). A job its user held after
-- cosched released it carries a start's mark and is the user's to release.
local function held_by_cosched(job_rec)
    local mark = job_rec.admin_comment or ""
    if job_rec.priority ~= 0 then
        return false
    end
    return mark == "cosched;held" or string.sub(mark, 1, 21) == "cosched;held;program=" or
        (string.sub(mark, 1, 8) == "cosched;" and string.find(mark, ";act=park;", 1, true) ~= nil)
end

-- The release race (issue 36): a user's own `scontrol release` (a priority
-- above 0 asked for a job at priority 0) of a job cosched holds would start
-- it wherever Slurm likes before cosched's next round could hold it again.
-- Refused here, under slurmctld's job lock, so no round is needed; every
-- other change to a held job (its time limit, its name) goes through.
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    local p = job_desc.priority
    local raising = p ~= nil and p ~= slurm.NO_VAL and p ~= 0
    if raising and held_by_cosched(job_rec) and not MAY_RELEASE[modify_uid] then
        slurm.log_info("cosched job_submit.lua: uid %s may not release job %s: cosched holds it", tostring(modify_uid), tostring(job_rec.job_id))
        -- 22.05 discards slurm.log_user() in job_modify: the user reads
        -- "Access/permission denied", the log says why.
        return slurm.ESLURM_ACCESS_DENIED or slurm.ERROR
    end
    return slurm.SUCCESS
end
