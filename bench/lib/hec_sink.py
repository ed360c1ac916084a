#!/usr/bin/env python3
"""A loopback HTTP Event Collector for the benchmark's --stream point: accepts
`POST /services/collector/event` (concatenated JSON objects `{"time": <epoch seconds>, "event": ...}`,
contract §5.4), answers 200, and keeps counts and the delivery lag (arrival time minus each event's
`time`). `GET /stats` returns them as JSON; `POST /reset` starts the counts again.

Usage: hec_sink.py PORT"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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
        body = self.rfile.read(n).decode()
        now = time.time()
        dec, i, events, lags = json.JSONDecoder(), 0, 0, []
        while i < len(body):
            while i < len(body) and body[i].isspace():
                i += 1
            if i >= len(body):
                break
            obj, i = dec.raw_decode(body, i)
            events += 1
            lags.append(now - float(obj["time"]))
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
