-- wrk script for `bench/run.sh --events-scale`: cycles through a pool of prepared requests, one
-- line each in the file named by BENCH_POOL: "<Authorization value>\t<body>\t<X-Forwarded-For>",
-- POST to BENCH_PATH. done() prints one JSON line starting with BENCH_RESULT (requests, non-2xx,
-- latency).
local path = os.getenv("BENCH_PATH") or "/"
local pool = {}
local idx = 1

function init(args)
  local f = assert(io.open(os.getenv("BENCH_POOL"), "r"))
  for line in f:lines() do
    local a = line:find("\t", 1, true)
    local b = line:find("\t", a + 1, true)
    local h = { ["Content-Type"] = "application/json", ["Authorization"] = line:sub(1, a - 1) }
    local body = line:sub(a + 1, (b or 0) - 1)
    if b then h["X-Forwarded-For"] = line:sub(b + 1) end
    pool[#pool + 1] = wrk.format("POST", path, h, body)
  end
  f:close()
  assert(#pool > 0, "empty pool")
end

function request()
  local r = pool[idx]
  idx = idx % #pool + 1
  return r
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"non_2xx":%d,"timeouts":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.status, e.timeout, latency:percentile(50), latency:percentile(99)))
end
