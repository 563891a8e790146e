-- batchboard_loadtest's request mix for wrk (LuaJIT).
--
-- Each thread picks pages by weight from the list the command wrote
-- (BB_MIX_FILE: weight, name, htmx flag and path per line), times every
-- response on the monotonic clock and stops after its share of the request
-- budget (BB_MAX_REQUESTS / threads). done() writes one line per response
-- (page, status, start and end in microseconds) to BB_SAMPLES_FILE.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bb_timespec;
int clock_gettime(int clk_id, bb_timespec *tp);
]]
local clock = ffi.new("bb_timespec")
local function now_us()
  ffi.C.clock_gettime(1, clock)
  return tonumber(clock.tv_sec) * 1000000 + math.floor(tonumber(clock.tv_nsec) / 1000)
end

local pages, total = {}, 0
for line in io.lines(os.getenv("BB_MIX_FILE")) do
  local weight, name, htmx, path = line:match("^(%d+)\t([^\t]+)\t(%d)\t(.+)$")
  if weight then
    total = total + tonumber(weight)
    table.insert(pages, { upto = total, name = name, htmx = htmx == "1", path = path })
  end
end

local cookie = os.getenv("BB_COOKIE")
local threads = {}
local thread_count = tonumber(os.getenv("BB_THREADS"))
local budget = math.floor(tonumber(os.getenv("BB_MAX_REQUESTS")) / thread_count)

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

local pending = {}
samples = {}
local answered = 0

function init(args)
  math.randomseed(1000 + (id or 0))
end

function request()
  local pick = math.random(total)
  local page = pages[#pages]
  for _, candidate in ipairs(pages) do
    if pick <= candidate.upto then
      page = candidate
      break
    end
  end
  local headers = { Cookie = cookie }
  if page.htmx then
    headers["HX-Request"] = "true"
  end
  table.insert(pending, { page.name, now_us() })
  return wrk.format("GET", page.path, headers)
end

function response(status, headers, body)
  local started = table.remove(pending, 1)
  if started then
    samples[#samples + 1] = started[1] .. "\t" .. status .. "\t" .. started[2] .. "\t" .. now_us()
  end
  answered = answered + 1
  if answered >= budget then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local out = io.open(os.getenv("BB_SAMPLES_FILE"), "w")
  for _, thread in ipairs(threads) do
    for _, line in ipairs(thread:get("samples") or {}) do
      out:write(line, "\n")
    end
  end
  local e = summary.errors
  out:write(string.format("#errors\t%d\t%d\t%d\t%d\t%d\n", e.connect, e.read, e.write, e.timeout, e.status))
  out:close()
end
