#!/usr/bin/env python3
"""Prints the benchmark's table (Markdown) from a run directory: run.json and results.jsonl as
written by bench/run.sh. The issue-6 targets are judged here, and only here (never in tests)."""
import json
import sys


def instructions(d: str, run: dict) -> int:
    """bench/run.sh --instructions: instructions per request (callgrind) and the ratios by them."""
    pts = {}
    for line in open(f"{d}/instructions.jsonl"):
        if line.strip():
            r = json.loads(line)
            pts[r["name"]] = r
    print(f"## {run['date']} · commit {run['commit']} · instructions (callgrind)"
          + (" · --conditions" if run.get("conditions") else ""))
    print()
    print("Each point: the requests one after another on one connection, after as many uncounted; the "
          "instructions of the whole svc process (every thread) from the first request until it was idle "
          "again, per request. Kernel time, cache misses and contention are not in these counts.")
    print()
    print("| point | requests | instructions / request |")
    print("|---|---:|---:|")
    for name, r in pts.items():
        print(f"| {name} | {r['requests']} | {r['per_request']:,} |")
    print()

    def per(name):
        r = pts.get(name)
        return r["per_request"] if r else None

    rows = [("/edge/v1/credentials (10 policies) ÷ Svc health, by instructions", per("svc.health"), per("svc.cred@10"))]
    if "svc.cred@10+cond" in pts:
        plain = [v for v in (per("svc.cred@10"), per("svc.cred@10+again")) if v]
        rows.append(("/edge/v1/credentials with a time and a GeoIP condition ÷ without, by instructions",
                     sum(plain) / len(plain), per("svc.cred@10+cond")))
    print("| ratio (throughput-like: the cost of the second point ÷ the cost of the first, inverted) | value |")
    print("|---|---:|")
    for label, base, other in rows:
        print(f"| {label} | {'n/a' if not base or not other else f'{base / other * 100:.1f}%'} |")
    if "svc.cred@10+hec" in pts and per("svc.cred@10"):
        # Issue 34 accepted a HEC stream's cost while its lag stays under 5 s: shown, not judged.
        extra_pct = (per("svc.cred@10+hec") / per("svc.cred@10") - 1) * 100
        print(f"| one HEC stream: instructions added to /credentials (delivery included; informational) | {extra_pct:+.1f}% |")
    print()
    # Issue 34: the edge write path's guard is its instruction budget (it retired "≥ 30% of health").
    cred = per("svc.cred@10")
    if cred:
        verdict = "PASS" if cred <= 200_000 else "FAIL"
        print("| target (issue 34) | measured | verdict |")
        print("|---|---:|---|")
        print(f"| instructions per /edge/v1/credentials (10 policies) ≤ 200,000 | {cred:,} | **{verdict}** |")
    return 0


def events_scale(d: str, run: dict) -> int:
    """bench/run.sh --events-scale (issue 34): the database's bytes per /credentials request and
    each query's time at each size, per database, with issue 34's targets judged."""
    sizes, queries, extra = [], [], []
    for line in open(f"{d}/events.jsonl"):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("kind") == "size":
            sizes.append(r)
        elif "query" in r:
            queries.append(r)
        else:
            extra.append(r)
    print(f"## {run['date']} · commit {run['commit']} · --events-scale {run['events_scale']}")
    print()
    print(f"Load before: {' / '.join(run['load_before'])}. Each query through the API, the median of 3 "
          "(wall time of the HTTP exchange); `recordsTotal` as answered (`~`: estimated).")
    print()
    for r in extra:
        print(f"- {r.get('kind')}: {json.dumps({k: v for k, v in r.items() if k != 'kind'})}")
    print()
    print("| database | authorization events | /credentials requests | database bytes | bytes per request (fill) | fill req/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for s in sizes:
        per = (s["bytes"] - s["bytes_before_fill"]) / max(s["requests"], 1)
        print(f"| {s['db']} | {s['authz']:,} | {s['requests']:,} | {s['bytes']:,} | {per:,.0f} | {s['fill_rate']:,} |")
    print()
    labels = list(dict.fromkeys(q["label"] for q in queries))
    whats = list(dict.fromkeys(q["query"] for q in queries))
    by = {(q["label"], q["query"]): q for q in queries}
    print("| query | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for w in whats:
        cells = []
        for lab in labels:
            q = by.get((lab, w))
            if not q:
                cells.append("")
            elif q["ms"] is None:
                cells.append(f"> {q['timeout_s']:.0f} s")
            else:
                tot = q.get("total")
                t = "" if tot is None else f" ({'~' if q.get('estimated') else ''}{tot:,})"
                cells.append(f"{q['ms']:,.0f} ms{t}")
        print(f"| {w} | " + " | ".join(cells) + " |")
    print()
    # Issue 34's targets, judged on the largest size of each database.
    def limit(w):
        if w.startswith(("one event", "workload events: one", "audit: one")):
            return 5
        if "search matching nothing" in w:
            return 300
        if "search matching many" in w:
            return 100
        return 50
    print("| target (issue 34), at the largest size measured | database | measured | verdict |")
    print("|---|---|---:|---|")
    for db in dict.fromkeys(s["db"] for s in sizes):
        lab = [lb for lb in labels if lb.startswith(db + " ")]
        if not lab:
            continue
        lab = lab[-1]
        for w in whats:
            q = by.get((lab, w))
            if not q:
                continue
            ok = q["ms"] is not None and q["ms"] <= limit(w)
            shown = f"> {q['timeout_s']:.0f} s" if q["ms"] is None else f"{q['ms']:,.1f} ms"
            print(f"| {w} ≤ {limit(w)} ms | {db} ({lab.split(' ', 1)[1]}) | {shown} | **{'PASS' if ok else 'FAIL'}** |")
        last = [s for s in sizes if s["db"] == db][-1]
        per = (last["bytes"] - last["bytes_before_fill"]) / max(last["requests"], 1)
        print(f"| ≤ 700 bytes of database per /credentials request | {db} | {per:,.0f} | **{'PASS' if per <= 700 else 'FAIL'}** |")
    return 0


def main() -> int:
    d = sys.argv[1]
    run = json.load(open(f"{d}/run.json"))
    if run.get("events_scale"):
        return events_scale(d, run)
    points, extra = {}, {}
    for line in open(f"{d}/results.jsonl"):
        if not line.strip():
            continue
        r = json.loads(line)
        if "extra" in r:
            extra[r["extra"]] = r["value"]
        else:
            points[(r["name"], r["conc"])] = r
    if run.get("instructions"):
        return instructions(d, run)
    smoke = run["mode"] == "smoke"
    _, mid, big = run["policies"]
    concs = sorted({c for _, c in points})

    def rps(name, c):
        p = points.get((name, c))
        return p["rps"] if p else None

    def ratio(a, b):
        return a / b if a is not None and b else None

    def cpu_of(name, c):
        p = points.get((name, c))
        return p.get("cpu_us_per_req") if p else None

    out = []
    w = out.append
    conditions = run.get("conditions", False)
    w(f"## {run['date']} · commit {run['commit']} · {run['mode']} run" + (" · --conditions" if conditions else ""))
    w("")
    lb, la = run.get("load_before", ["?"] * 3), run.get("load_after", ["?"] * 3)
    w(f"Load average before {' '.join(lb)}, after {' '.join(la)}; {run['cpus']} CPUs; server on CPU 0, "
      f"`wrk -t1` on CPU 1; {run['duration_s']} s per point after a warm-up; {run['id_tokens']} distinct ID tokens, "
      f"{run['access_tokens']} distinct edge access tokens; Svc rate limits raised to 10,000,000/s "
      f"(SVC_EDGE_AUTH_RATE/BURST, SVC_EDGE_CREDENTIALS_RATE/BURST) so no request is answered 429.")
    if conditions:
        w("")
        w("`--conditions`: `svc.cred@10+cond` is `svc.cred@10`'s requests to a second server workload whose "
          "policy carries an `SvcTimeCondition` (every day 00:00-24:00 UTC) and an `SvcGeoIPCondition` (US-TX; "
          "SVC_GEOIP_DB maps 127.0.0.0/8 there), both passing (that policy is one of the 10); `svc.cred@10+again` "
          "repeats `svc.cred@10` right after it, and the ratio compares with the mean of the two; the other points "
          "are as without `--conditions`.")
    w("")
    w("| point | conc | req/s | p50 ms | p99 ms | server CPU µs/req | events stored / req | event drain s |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    expected = {"svc.auth": "1", "svc.cred": "3+1"}
    for (name, c), p in points.items():
        ev = ""
        if "auth_events" in p and p["requests"]:
            a, wl = p["auth_events"] / p["requests"], p["workload_events"] / p["requests"]
            want = expected.get(name.split("@")[0], "0")
            ev = f"{a:.2f}" + (f"+{wl:.2f}" if wl else "") + f" (want {want})"
        cpu = f"{p['cpu_us_per_req']:.0f}" if "cpu_us_per_req" in p else ""
        drain = f"{p['drain_s']:.1f}" if "drain_s" in p and name != "svc.health" else ""
        w(f"| {name} | {c} | {p['rps']:,.0f} | {p['p50_us'] / 1000:.2f} | {p['p99_us'] / 1000:.2f} | {cpu} | {ev} | {drain} |")
    w("")
    if "agent_load" in extra:
        al, rss = extra["agent_load"], extra.get("agent_rss", {})
        w("`agent.hit`: `GET /v1/credentials` of one `svc-edge agent` answered from its cache (the CPU column "
          "is the agent's). Its load on svc while it keeps its entries fresh:")
        w("")
        w("| agent entries | seconds | /auth calls | /credentials calls | calls per minute | agent RSS |")
        w("|---:|---:|---:|---:|---:|---|")
        w(f"| {al['entries']} | {al['seconds']:.0f} | {al['auth']} | {al['credentials']} | {al['per_minute']} | {rss} |")
        w("")
        print("\n".join(out))
        return 0

    def fmt(x, pct=False):
        if x is None:
            return "n/a"
        return f"{x * 100:.0f}%" if pct else f"{x:.1f}x"

    def bracket(before, after, c):
        """The mean req/s of two points (the second when measured), else the first's."""
        a, b = rps(before, c), rps(after, c)
        if a is None or b is None:
            return a
        return (a + b) / 2

    cred10, credmid, credbig = "svc.cred@10", f"svc.cred@{mid}", f"svc.cred@{big}"
    ratios = [
        ("/edge/v1/auth ÷ OpenBao jwt login", [ratio(rps("svc.auth", c), rps("bao.jwt-login", c)) for c in concs], False),
        ("/edge/v1/credentials (10 policies) ÷ OpenBao kv-v2 read", [ratio(rps(cred10, c), rps("bao.kv-read", c)) for c in concs], False),
        ("/edge/v1/credentials (10 policies) ÷ Svc health", [ratio(rps(cred10, c), rps("svc.health", c)) for c in concs], True),
        (f"/edge/v1/credentials {mid:,} ÷ 10 policies", [ratio(rps(credmid, c), rps(cred10, c)) for c in concs], True),
        (f"/edge/v1/credentials {big:,} ÷ 10 policies", [ratio(rps(credbig, c), rps(cred10, c)) for c in concs], True),
        # Informational (not a target): OpenBao recording every request too, with its file audit device.
        ("/edge/v1/auth ÷ OpenBao jwt login with its audit device (informational)",
         [ratio(rps("svc.auth", c), rps("bao.jwt-login+audit", c)) for c in concs], False),
        ("/edge/v1/credentials (10 policies) ÷ OpenBao kv-v2 read with its audit device (informational)",
         [ratio(rps(cred10, c), rps("bao.kv-read+audit", c)) for c in concs], False),
        # --conditions (issue 18: within 10%, i.e. ≥ 90%).
        # "Without": the mean of svc.cred@10 and svc.cred@10+again, the points on either side.
        ("/edge/v1/credentials with a time and a GeoIP condition ÷ without (10 policies)",
         [ratio(rps(cred10 + "+cond", c), bracket(cred10, cred10 + "+again", c)) for c in concs], True),
        # --stream (issue 19; informational since issue 34: accepted while the lag stays < 5 s).
        ("server CPU per /edge/v1/credentials with one HEC log stream ÷ without (informational)",
         [ratio(cpu_of(cred10 + "+hec", c), cpu_of(cred10, c)) for c in concs], True),
    ]
    w("| ratio | " + " | ".join(f"c={c}" for c in concs) + " |")
    w("|---|" + "---:|" * len(concs))
    if mid == big:
        ratios[3] = (ratios[3][0], [None] * len(concs), True)
    for label, vals, pct in [r for r in ratios if any(v is not None for v in r[1]) or "OpenBao" in r[0]]:
        w(f"| {label} | " + " | ".join(fmt(v, pct) for v in vals) + " |")
    w("")

    def mib(key, field="VmHWM"):
        v = extra.get(key)
        return v.get(field) if isinstance(v, dict) else None

    w("| memory and start-up | value |")
    w("|---|---:|")
    for k, label in dict.fromkeys([(f"load_{mid}", f"loading to {mid:,} policies (management API)"),
                                   (f"load_{big}", f"loading to {big:,} policies (management API)")]):
        v = extra.get(k)
        if isinstance(v, dict):
            w(f"| {label} | {v['added']:,} policies in {v['seconds']} s ({v['writes_per_s']:,.0f} writes/s) |")
    rows = [(f"mem_after_{mid}", f"peak RSS (VmHWM) after loading {mid:,} policies"),
            (f"mem_after_{big}", f"peak RSS (VmHWM) after loading {big:,} policies")][: 1 if mid == big else 2] + [

        (f"mem_start_{big}", f"peak RSS (VmHWM) of a fresh start with {big:,} policies"),
        (f"mem_end_{big}", f"peak RSS (VmHWM) of that process after its credential points")]
    for k, label in rows:
        if mib(k) is not None:
            w(f"| {label} | {mib(k):.0f} MiB (RSS now {mib(k, 'VmRSS'):.0f} MiB) |")
    st = extra.get(f"startup_{big}")
    if isinstance(st, list):
        starts = [float(x) for x in st]
        st = sorted(starts)[len(starts) // 2]
        w(f"| start-up with {big:,} policies (exec to Healthy), three starts | "
          f"{', '.join(f'{x:.2f}' for x in starts)} s (median {st:.2f} s) |")
    elif st is not None:
        w(f"| start-up with {big:,} policies (exec to Healthy) | {float(st):.2f} s |")
    w("")

    # Targets of issue 6.
    def worst(vals):
        vals = [v for v in vals if v is not None]
        return min(vals) if vals else None

    def p99(name, c):
        p = points.get((name, c))
        return p["p99_us"] / 1000 if p else None

    peak_big = max([v for v in (mib(f"mem_after_{big}"), mib(f"mem_start_{big}"), mib(f"mem_end_{big}")) if v is not None],
                   default=None)
    targets = [
        ("/edge/v1/auth ≥ 6x OpenBao jwt login (both c)", worst(ratios[0][1]), lambda v: v >= 6, lambda v: fmt(v)),
        ("/edge/v1/credentials ≥ 20x OpenBao kv-v2 read (both c)", worst(ratios[1][1]), lambda v: v >= 20, lambda v: fmt(v)),
        ("/edge/v1/credentials ≥ 50% of health (both c)", worst(ratios[2][1]), lambda v: v >= 0.5, lambda v: fmt(v, True)),
        (f"/edge/v1/credentials at {big:,} policies ≥ 90% of 10 (both c)", worst(ratios[4][1]), lambda v: v >= 0.9, lambda v: fmt(v, True)),
        (f"peak RSS ≤ 300 MB with {big:,} policies", peak_big, lambda v: v * 1.048576 <= 300, lambda v: f"{v * 1.048576:.0f} MB"),
        (f"start-up ≤ 5 s with {big:,} policies (median of 3)", float(st) if st is not None else None, lambda v: v <= 5, lambda v: f"{v:.2f} s"),
        ("p99 /edge/v1/auth ≤ 2 ms at c=10", p99("svc.auth", 10), lambda v: v <= 2, lambda v: f"{v:.2f} ms"),
        ("p99 /edge/v1/credentials ≤ 2 ms at c=10 (10 policies)", p99(cred10, 10), lambda v: v <= 2, lambda v: f"{v:.2f} ms"),
        (f"p99 /edge/v1/credentials ≤ 2 ms at c=10 ({big:,} policies)", p99(credbig, 10), lambda v: v <= 2, lambda v: f"{v:.2f} ms"),
    ]
    hec = extra.get("hec") if isinstance(extra.get("hec"), dict) else None
    targets19 = [
        ("/edge/v1/credentials ≥ 10x OpenBao kv-v2 read (both c)", worst(ratios[1][1]), lambda v: v >= 10, lambda v: fmt(v)),
        ("/edge/v1/auth ≥ 6x OpenBao jwt login (both c)", worst(ratios[0][1]), lambda v: v >= 6, lambda v: fmt(v)),
        ("p99 /edge/v1/credentials ≤ 3 ms at c=10 (10 policies)", p99(cred10, 10), lambda v: v <= 3, lambda v: f"{v:.2f} ms"),
        ("HEC delivery lag < 5 s during the point (max)", hec["max_lag_s"] if hec else None, lambda v: v < 5,
         lambda v: f"{v:.2f} s ({hec['events']:,} events in {hec['batches']} batches)"),
    ]
    targets = targets + [(f"issue 19: {label}", v, ok, show) for label, v, ok, show in targets19]
    w("| target (issue 6, and issue 19 where marked) | measured | verdict |")
    w("|---|---:|---|")
    failed = passed = 0
    for label, v, ok, show in targets:
        if v is None:
            verdict = "n/a"
        elif smoke:
            verdict = "not judged (smoke)"
        elif ok(v):
            verdict, passed = "PASS", passed + 1
        else:
            verdict, failed = "**FAIL**", failed + 1
        w(f"| {label} | {show(v) if v is not None else 'n/a'} | {verdict} |")
    w("")
    if smoke:
        w("Smoke run: small pools and 1 s points; the figures only show that every point works.")
    else:
        unmeasured = len(targets) - passed - failed
        w(f"{passed} of {len(targets)} targets pass" + (f", {unmeasured} not measured." if unmeasured else "."))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
