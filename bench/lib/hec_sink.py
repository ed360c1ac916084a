#!/usr/bin/env python3
"""A loopback HTTP Event Collector for the benchmark's --stream point: accepts
`POST /services/collector/event` (concatenated JSON objects `{"time": <epoch seconds>, "event": ...}`,
contract §5.4), answers 200, and keeps counts and the delivery lag (arrival time minus each event's
`time`). `GET /stats` returns them as JSON; `POST /reset` starts the counts again.

It does not decode the events: it finds each one's `{"time":<seconds>,` (svc writes `time` first;
inside a JSON string a `"` is always escaped, so the pattern only matches a record's start). A full
JSON decode took ~50 ms of the load CPU per 1,000-record transaction (~2.5 MB), which at the
point's ~15 transactions a second saturated the CPU it shares with wrk, so svc's deliverer waited
on the sink's answers and the measured lag was the sink's (the tests check the framing, against
fakes that decode it).

Usage: hec_sink.py PORT"""
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RECORD = re.compile(rb'\{"time":([0-9.]+),')
LOCK = threading.Lock()
STATS = {}


def reset():
    with LOCK:
        STATS.clear()
        STATS.update(batches=0, events=0, bytes=0, max_lag_s=0.0, lags=[], auth=None)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path != "/stats":
            return self._answer(404, {"text": "not found"})
        with LOCK:
            lags = sorted(STATS["lags"])
            out = {k: v for k, v in STATS.items() if k != "lags"}
        out["p99_lag_s"] = lags[int(len(lags) * 0.99)] if lags else None
        self._answer(200, out)

    def do_POST(self):
        if self.path == "/reset":
            reset()
            return self._answer(200, {})
        if self.path != "/services/collector/event":
            return self._answer(404, {"text": "not found"})
        n = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(n)
        now = time.time()
        if not body.startswith(b'{"time":'):
            return self._answer(400, {"text": "Invalid data format", "code": 6})
        lags = [now - float(m.group(1)) for m in RECORD.finditer(body)]
        events = len(lags)
        with LOCK:
            STATS["batches"] += 1
            STATS["events"] += events
            STATS["bytes"] += n
            STATS["lags"].extend(lags)
            STATS["max_lag_s"] = max([STATS["max_lag_s"]] + lags)
            STATS["auth"] = (self.headers.get("authorization") or "").split(" ")[0]
        self._answer(200, {"text": "Success", "code": 0})


def main() -> int:
    reset()
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
