-- wrk script: cycles through a pool of prepared requests, one line each in the file named by
-- BENCH_POOL: "<header value>\t<body>" (the header, named by BENCH_HEADER, may be empty).
-- BENCH_METHOD / BENCH_PATH give the request line; without BENCH_POOL every request is the same
-- (BENCH_HEADER_VALUE, no body). done() prints one JSON line starting with BENCH_RESULT.
local method = os.getenv("BENCH_METHOD") or "GET"
local path = os.getenv("BENCH_PATH") or "/"
local header = os.getenv("BENCH_HEADER")
local pool = {}
local idx = 1

function init(args)
  local file = os.getenv("BENCH_POOL")
  if file == nil or file == "" then
    local h = {}
    if header and header ~= "" then h[header] = os.getenv("BENCH_HEADER_VALUE") end
    pool[1] = wrk.format(method, path, h, nil)
    return
  end
  local f = assert(io.open(file, "r"))
  for line in f:lines() do
    local tab = line:find("\t", 1, true)
    local value, body = line:sub(1, tab - 1), line:sub(tab + 1)
    local h = { ["Content-Type"] = "application/json" }
    if header and header ~= "" and value ~= "" then h[header] = value end
    pool[#pool + 1] = wrk.format(method, path, h, body)
  end
  f:close()
  assert(#pool > 0, "empty pool " .. file)
end

function request()
  local r = pool[idx]
  idx = idx % #pool + 1
  return r
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,"read_errors":%d,' ..
    '"write_errors":%d,"timeouts":%d,"non_2xx":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
