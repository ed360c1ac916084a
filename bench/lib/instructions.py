#!/usr/bin/env python3
"""Instructions per request of one benchmark point, counted by callgrind (bench/run.sh --instructions).

    instructions.py --pid PID --url URL --method M --pool FILE --header NAME --count N --out-dir DIR --name NAME
                    [--skip S] [--hec SINK_URL --hec-events K]

svc runs under `valgrind --tool=callgrind`. This zeroes its counters (callgrind_control -z), sends
N requests one after another on one keep-alive connection (the pool's lines in turn from line S,
as bench/wrk/pool.lua does: `[header value<TAB>]body`), waits until the server is idle, dumps the
counters (callgrind_control -d) and prints one JSON line: the point's name, the requests, the
instructions of the whole process (every thread: the request, the event writer, SQLite) per
request, and the non-2xx count. Instruction counts do not drift with the VM's speed the way CPU
time does (±40% here), so two builds or two points compare to a fraction of a percent; what they
leave out is the kernel (system calls, page faults) and the cost of cache misses and contention.

With --hec (the --stream point), the count also covers delivering the point's events to the
loopback HEC sink (bench/lib/hec_sink.py): before zeroing it waits until the sink has everything
sent before (its count unchanged for 3 s) and resets it; after the requests it waits until the sink
has K events per request, then for the server to be idle.
"""

import argparse
import glob
import http.client
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def idle(pid: int, limit: float = 60.0) -> None:
    """Waits until the process used no CPU in two consecutive half seconds."""
    end = time.time() + limit
    quiet, a = 0, cpu_ticks(pid)
    while time.time() < end and quiet < 2:
        time.sleep(0.5)
        b = cpu_ticks(pid)
        quiet = quiet + 1 if b - a <= 1 else 0
        a = b


def sink_events(sink: str) -> int:
    with urllib.request.urlopen(sink + "/stats", timeout=10) as r:
        return int(json.load(r)["events"])


def sink_settled(sink: str, limit: float = 300.0) -> None:
    """Waits until the sink's count has not changed for 3 s."""
    end, last, since = time.time() + limit, -1, time.time()
    while time.time() < end:
        n = sink_events(sink)
        if n != last:
            last, since = n, time.time()
        elif time.time() - since >= 3:
            return
        time.sleep(0.5)
    raise SystemExit("instructions.py: the HEC sink kept receiving events")


def sink_reaches(sink: str, want: int, limit: float = 600.0) -> None:
    end = time.time() + limit
    while time.time() < end:
        if sink_events(sink) >= want:
            return
        time.sleep(0.5)
    raise SystemExit(f"instructions.py: the HEC sink got {sink_events(sink)} of {want} events")


def control(*args: str) -> None:
    r = subprocess.run(["callgrind_control", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"instructions.py: callgrind_control {' '.join(args)} failed: {r.stderr or r.stdout}")


def main() -> int:
    p = argparse.ArgumentParser()
    for a in ("--pid", "--url", "--method", "--count", "--out-dir", "--name"):
        p.add_argument(a, required=True)
    for a in ("--pool", "--header", "--hec"):  # none for a GET without a body or header
        p.add_argument(a, default="")
    p.add_argument("--hec-events", type=int, default=0)
    p.add_argument("--skip", type=int, default=0)
    a = p.parse_args()
    pid, count, skip = int(a.pid), int(a.count), a.skip
    u = urllib.parse.urlsplit(a.url)
    lines = []
    if a.pool:
        with open(a.pool) as f:
            lines = [l.rstrip("\n") for l in f if l.strip()]
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)

    def send(i: int) -> int:
        headers, body = {}, None
        if lines:
            line = lines[(skip + i) % len(lines)]
            if a.header:
                value, body = line.split("\t", 1)
                headers[a.header] = value
            else:
                body = line
            headers["Content-Type"] = "application/json"
        conn.request(a.method, u.path, body=body, headers=headers)
        r = conn.getresponse()
        r.read()
        return r.status

    idle(pid)
    if a.hec:
        sink_settled(a.hec)
        urllib.request.urlopen(urllib.request.Request(a.hec + "/reset", method="POST"), timeout=10).read()
        idle(pid)
    control("-z", str(pid))
    bad = sum(1 for i in range(count) if not 200 <= send(i) < 300)
    if a.hec:
        sink_reaches(a.hec, a.hec_events * count)
    idle(pid)
    before = set(glob.glob(os.path.join(a.out_dir, "callgrind.out.*")))
    control("-d", a.name, str(pid))
    new = sorted(set(glob.glob(os.path.join(a.out_dir, "callgrind.out.*"))) - before, key=os.path.getmtime)
    if not new:
        raise SystemExit("instructions.py: callgrind wrote no dump")
    total = 0
    for path in new:  # one file per dump (callgrind's --separate-threads is off)
        with open(path) as f:
            for line in f:
                m = re.match(r"^(?:summary|totals):\s+(\d+)", line)
                if m:
                    total = max(total, int(m.group(1)))
    print(json.dumps({"name": a.name, "requests": count, "instructions": total,
                      "per_request": round(total / count), "non_2xx": bad, "dump": os.path.basename(new[-1])}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
