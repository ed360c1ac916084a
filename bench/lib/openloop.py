"""Open-loop load for bench/retention.sh: POST /edge/v1/credentials at a fixed rate.

    openloop.py URL POOL RATE SECS [SLICE]

POOL is an `--events-scale` pool file (bench/wrk/fill.lua's lines: "<Authorization>\t<body>\t
<X-Forwarded-For>"). Requests go out at RATE a second whatever the answers' pace (wrk's closed
loop slows down with the server and hides a stall); each latency counts from the request's
scheduled time. Prints p50 / p99 / max per SLICE seconds (default 5) and the non-2xx count.
"""
import asyncio
import sys
import time
url, poolf, rate, secs = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
slice_s = float(sys.argv[5]) if len(sys.argv) > 5 else 5.0
host, port = url.split('//')[1].split(':'); port = int(port.split('/')[0]); path = '/edge/v1/credentials'
reqs = []
for line in open(poolf):
    p = line.rstrip('\n').split('\t')
    body = p[1].encode()
    h = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nAuthorization: {p[0]}\r\nContent-Length: {len(body)}\r\n"
    if len(p) > 2: h += f"X-Forwarded-For: {p[2]}\r\n"
    reqs.append(h.encode() + b"\r\n" + body)
idle = []; lat = []; bad = 0
async def conn():
    r, w = await asyncio.open_connection(host, port); return (r, w)
async def one(i, t_sched):
    global bad
    c = idle.pop() if idle else await conn()
    r, w = c
    w.write(reqs[i % len(reqs)])
    status = await r.readline()
    n = 0
    while True:
        l = await r.readline()
        if l in (b'\r\n', b''): break
        if l.lower().startswith(b'content-length:'): n = int(l.split(b':')[1])
    await r.readexactly(n)
    if not status.startswith(b'HTTP/1.1 2'): bad += 1
    lat.append((t_sched, time.perf_counter() - t_sched))
    idle.append(c)
async def main():
    for _ in range(32): idle.append(await conn())
    t0 = time.perf_counter(); i = 0; tasks = set()
    while True:
        t = t0 + i / rate
        if t - t0 > secs: break
        d = t - time.perf_counter()
        if d > 0: await asyncio.sleep(d)
        tk = asyncio.create_task(one(i, t)); tasks.add(tk); tk.add_done_callback(tasks.discard); i += 1
    await asyncio.gather(*tasks)
    sl = {}
    for ts, l in lat: sl.setdefault(int((ts - t0) // slice_s), []).append(l)
    for k in sorted(sl):
        v = sorted(sl[k]); p = lambda q: v[min(len(v) - 1, int(q * len(v)))] * 1000
        print(f"slice {k*slice_s:5.0f}s n={len(v)} p50 {p(.5):.2f} ms p99 {p(.99):.2f} ms max {v[-1]*1000:.2f} ms")
    print(f"non-2xx {bad}, sent {i}")
asyncio.run(main())
