#!/usr/bin/env python3
"""`bench/run.sh --events-scale`: a fleet's events, and the event lists' queries timed at scale
(issue 34). Through Svc's public APIs only, like svcbench.py.

    events_scale.py setup --base URL --issuer-dir DIR --issuer URL --workloads W --state FILE --pool FILE
        A fleet of W workloads: a trust provider on the loopback issuer matching its issuer only,
        W client workloads (oidcIdTokenSubject system:job:fleet-NNNNN), W server workloads
        (fleet-api-NNNNN.fleet.example:443), one apikey provider and W policies joining them pairwise.
        One ID token per workload (valid a day), one /edge/v1/auth each; the wrk pool (fill.lua)
        gets one /edge/v1/credentials request per workload, each from its own client address
        (X-Forwarded-For 10.a.b.c: svc runs with SVC_TRUSTED_PROXIES=127.0.0.1/32), so the events
        carry W workloads, W server workloads, W policies, W addresses and W environments.
    events_scale.py audit --base URL --count N
        N audit entries: N PATCHes of one agent controller (one entry each), 8 in flight.
    events_scale.py queries --base URL --state FILE --label L [--timeout S] [--runs 3] [--only PREFIX]
        Times each query of the list below through the API (wall time of the HTTP exchange on one
        keep-alive connection, the median of --runs), prints one JSON line per query:
        {"label", "list", "query", "ms", "runs_ms", "total", "estimated", "items"}.
    events_scale.py dbsize --sqlite PATH | --postgres URL
        Bytes of database: the SQLite file with its WAL, or pg_database_size.
"""
import argparse
import http.client
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
import issuer as issuer_lib  # noqa: E402
import svcbench  # noqa: E402

from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import padding  # noqa: E402

FLEET_SUBJECT = "system:job:fleet-{:05d}"
FLEET_HOST = "fleet-api-{:05d}.fleet.example"


def xff(i: int) -> str:
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


def setup(a) -> None:
    token = svcbench.login(a.base)
    api = svcbench.Api(a.base, token)
    _, tp = api.call("POST", "/api/v1/trust-providers", {
        "name": "fleet-issuer", "isActive": True, "provider": "OidcIdToken", "oidcUrl": a.issuer,
        "matchRules": [{"attribute": "OidcIssuer", "value": a.issuer}]})
    cp = svcbench.apikey_provider(api, "fleet-key", "fk_fleet_0123456789")
    work: queue.Queue = queue.Queue()
    for i in range(a.workloads):
        work.put(i)
    made: dict = {}
    errors: list = []

    def worker():
        w = svcbench.Api(a.base, token)
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                return
            try:
                cw = svcbench.client_workload(w, f"fleet-job-{i:05d}", FLEET_SUBJECT.format(i))
                sw = svcbench.server_workload(w, f"fleet-api-{i:05d}", FLEET_HOST.format(i))
                svcbench.policy(w, f"fleet-{i:05d}", cw, sw, [tp["externalId"]], cp)
                made[i] = (cw, sw)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"events_scale: setup failed: {errors[0]}")
    with open(os.path.join(a.issuer_dir, "key.pem"), "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    header = issuer_lib.b64u(json.dumps({"alg": "RS256", "kid": issuer_lib.KID, "typ": "JWT"},
                                        separators=(",", ":")).encode())
    now = int(time.time())
    edge = svcbench.Api(a.base)
    lines = []
    for i in range(a.workloads):
        claims = {"iss": a.issuer, "sub": FLEET_SUBJECT.format(i), "aud": a.base, "iat": now - 5,
                  "nbf": now - 5, "exp": now + 86_400, "jti": f"fleet-{i}"}
        si = header + "." + issuer_lib.b64u(json.dumps(claims, separators=(",", ":")).encode())
        idt = si + "." + issuer_lib.b64u(key.sign(si.encode(), padding.PKCS1v15(), hashes.SHA256()))
        body = svcbench.compact({"clientId": tp["edgeSdkClientId"], "client": {"oidc": {"identityToken": idt}}})
        edge.conn.request("POST", "/edge/v1/auth", body=body,
                          headers={"content-type": "application/json", "x-forwarded-for": xff(i)})
        r = edge.conn.getresponse()
        raw = r.read()
        if r.status != 200:
            raise SystemExit(f"events_scale: /edge/v1/auth -> {r.status}: {raw[:300]!r}")
        tok = json.loads(raw)["accessToken"]
        cred = svcbench.compact({"client": {"oidc": {"identityToken": idt}},
                                 "server": {"transportProtocol": "TCP", "host": FLEET_HOST.format(i), "port": 443},
                                 "credentialType": "ApiKey"})
        lines.append(f"Bearer {tok}\t{cred}\t{xff(i)}")
    with open(a.pool, "w") as f:
        f.write("\n".join(lines) + "\n")
    svcbench.check_credentials(edge, *lines[0].split("\t")[:2], what=FLEET_HOST.format(0))
    state = {"trustProvider": tp["externalId"], "workloads": a.workloads,
             "clientWorkloads": [made[i][0] for i in range(a.workloads)],
             "serverWorkloads": [made[i][1] for i in range(a.workloads)]}
    with open(a.state, "w") as f:
        json.dump(state, f)
    print(f"fleet of {a.workloads} workloads configured")


def audit(a) -> None:
    token = svcbench.login(a.base)
    api = svcbench.Api(a.base, token)
    r, _ = api.call("POST", "/api/v1/agent-controllers", {"name": "audit-marker", "isActive": True})
    marker = svcbench.location_id(r)
    work: queue.Queue = queue.Queue()
    for i in range(a.count):
        work.put(i)
    errors: list = []

    def worker():
        w = svcbench.Api(a.base, token)
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                return
            try:
                w.call("PATCH", f"/api/v1/agent-controllers/{marker}", {"version": f"touch {i}"})
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"events_scale: audit fill failed: {errors[0]}")
    print(json.dumps({"audit_entries": a.count, "seconds": round(time.monotonic() - t0, 1)}))


# The queries of issue 34's table and targets. `{cw}`, `{sw}`, `{id}`: filled in from the state
# and from a first page. Each: (list path, items key, query, what it shows).
AUTHZ = "/api/v1/authorization-events"
WORKLOAD = "/api/v1/workload-events"
AUDIT = "/api/v1/audit-logs"
QUERIES = [
    (AUTHZ, "authorizationEvents", "", "first page, default window"),
    (AUTHZ, "authorizationEvents", "search=zz-no-such-name", "search matching nothing"),
    (AUTHZ, "authorizationEvents", "search=fleet-api", "search matching many (first page)"),
    (AUTHZ, "authorizationEvents", "severity=Warning", "severity=Warning (none match)"),
    (AUTHZ, "authorizationEvents", "severity=Info", "severity=Info (all match)"),
    (AUTHZ, "authorizationEvents", "event-type=access.credential", "event-type=access.credential"),
    (AUTHZ, "authorizationEvents", "event-type=access.authentication", "event-type=access.authentication (few)"),
    (AUTHZ, "authorizationEvents", "order=meta.clientIP%20asc", "order=meta.clientIP asc"),
    (AUTHZ, "authorizationEvents", "order=timestamp%20asc", "order=timestamp asc"),
    (AUTHZ, "authorizationEvents", "order=meta.contextId%20desc", "order=meta.contextId desc"),
    (AUTHZ, "authorizationEvents", "order=clientWorkload.name%20asc", "order=clientWorkload.name asc"),
    (AUTHZ, "authorizationEvents", "order=environment.oidc.sub%20desc", "order=environment.oidc.sub desc"),
    (AUTHZ, "authorizationEvents", "order=eventId%20asc", "order=eventId asc"),
    (AUTHZ, "authorizationEvents", "order=eventType%20asc", "order=eventType asc"),
    (AUTHZ, "authorizationEvents", "order=clientRequest.network.sourcePort%20desc", "order=clientRequest.network.sourcePort desc"),
    (WORKLOAD, "workloadEvents", "order=meta.clientWorkloadId%20desc", "workload events: order=meta.clientWorkloadId desc"),
    (AUTHZ, "authorizationEvents", "@{aid}", "one event by id"),
    (WORKLOAD, "workloadEvents", "", "workload events: first page"),
    (WORKLOAD, "workloadEvents", "source-workload={cw}", "workload events by source-workload (one of the fleet)"),
    (WORKLOAD, "workloadEvents", "target-workload={sw}", "workload events by target-workload (one of the fleet)"),
    (WORKLOAD, "workloadEvents", "application-protocol=HTTP", "workload events: application-protocol=HTTP (all)"),
    (WORKLOAD, "workloadEvents", "severity=Warning", "workload events: severity=Warning (none)"),
    (WORKLOAD, "workloadEvents", "search=zz-no-such-name", "workload events: search matching nothing"),
    (WORKLOAD, "workloadEvents", "search=10.0", "workload events: search matching many"),
    (WORKLOAD, "workloadEvents", "order=network.clientWorkloadPort%20asc", "workload events: order=network.clientWorkloadPort asc"),
    (WORKLOAD, "workloadEvents", "@{wid}", "workload events: one by id"),
    (AUDIT, "auditLogs", "", "audit: first page"),
    (AUDIT, "auditLogs", "search=zz-no-such-name", "audit: search matching nothing"),
    (AUDIT, "auditLogs", "search=agent", "audit: search matching many"),
    (AUDIT, "auditLogs", "severity=Warning", "audit: severity=Warning (none)"),
    (AUDIT, "auditLogs", "category=Roles", "audit: category=Roles (few)"),
    (AUDIT, "auditLogs", "order=target%20asc", "audit: order=target asc"),
    (AUDIT, "auditLogs", "order=actor.userName%20desc", "audit: order=actor.userName desc"),
    (AUDIT, "auditLogs", "@{lid}", "audit: one by id"),
    (AUDIT, "auditLogs", "search=ag", "audit: search of 2 characters (matching many)"),
    (AUDIT, "auditLogs", "search=fleet-job-00042", "audit: search matching few"),
    (AUDIT, "auditLogs", "search=trustprovider", "audit: search matching one (the trust provider's creation)"),
    (AUDIT, "auditLogs", "severity=Info", "audit: severity=Info (all)"),
    (AUDIT, "auditLogs", "category=AgentControllers", "audit: category=AgentControllers (all but the setup)"),
    (AUDIT, "auditLogs", "order=createdAt%20asc", "audit: order=createdAt asc"),
    (AUDIT, "auditLogs", "order=externalId%20desc", "audit: order=externalId desc"),
    (AUDIT, "auditLogs", "order=resourceSetId%20desc", "audit: order=resourceSetId desc"),
    (AUDIT, "auditLogs", "order=category%20desc", "audit: order=category desc"),
    (AUDIT, "auditLogs", "order=target%20desc", "audit: order=target desc"),
    (AUDIT, "auditLogs", "order=client.ipAddress%20asc", "audit: order=client.ipAddress asc"),
    (AUDIT, "auditLogs", "order=outcome.reason%20asc", "audit: order=outcome.reason asc"),
    (AUDIT, "auditLogs", "order=client.userAgent.browser%20desc", "audit: order=client.userAgent.browser desc"),
    (AUDIT, "auditLogs", "order=actor.accessPolicyId%20desc", "audit: order=actor.accessPolicyId desc"),
    (AUDIT, "auditLogs", "category=AgentControllers&order=actor.userName%20asc",
     "audit: category=AgentControllers, order=actor.userName asc"),
]


def queries(a) -> None:
    with open(a.state) as f:
        state = json.load(f)
    token = svcbench.login(a.base)
    u = urllib.parse.urlsplit(a.base)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=a.timeout)
    headers = {"authorization": f"Bearer {token}"}

    def get(path):
        nonlocal conn
        t0 = time.perf_counter()
        try:
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            raw = r.read()
        except (TimeoutError, OSError):
            conn.close()
            conn = http.client.HTTPConnection(u.hostname, u.port, timeout=a.timeout)
            return None, None
        ms = (time.perf_counter() - t0) * 1000
        if r.status not in (200, 204):
            raise SystemExit(f"events_scale: GET {path} -> {r.status}: {raw[:300]!r}")
        return ms, (json.loads(raw) if raw else None)

    fill = {"cw": state["clientWorkloads"][len(state["clientWorkloads"]) // 2],
            "sw": state["serverWorkloads"][len(state["serverWorkloads"]) // 2]}
    for path, key, fill_key in ((AUTHZ, "authorizationEvents", "aid"), (WORKLOAD, "workloadEvents", "wid"),
                                (AUDIT, "auditLogs", "lid")):
        _, body = get(f"{path}?per-page=1&span-last-days=3650" if path == AUDIT else f"{path}?per-page=1")
        items = (body or {}).get(key) or [{}]
        first = items[0]
        fill[fill_key] = (first.get("meta") or {}).get("eventId") or first.get("externalId") or "none"
    for path, key, q, what in QUERIES:
        if a.only and not what.startswith(a.only):
            continue
        q = q.format(**fill)
        url = f"{path}/{q[1:]}" if q.startswith("@") else f"{path}?{q}"
        runs, body = [], None
        for _ in range(a.runs):
            ms, body = get(url)
            if ms is None:
                runs.append(None)
                break
            runs.append(round(ms, 1))
        done = [r for r in runs if r is not None]
        out = {"label": a.label, "list": key, "query": what, "url": url,
               "ms": statistics.median(done) if len(done) == len(runs) else None,
               "runs_ms": runs, "timeout_s": a.timeout}
        if isinstance(body, dict) and key in body:
            out.update(total=body.get("recordsTotal"), estimated=bool(body.get("recordsTotalEstimated")),
                       items=len(body[key]))
        print(json.dumps(out), flush=True)
        print(f"[events] {a.label}: {what}: {out['ms']} ms {runs}", file=sys.stderr, flush=True)


def dbsize(a) -> None:
    if a.sqlite:
        total = 0
        d = os.path.dirname(a.sqlite) or "."
        base = os.path.basename(a.sqlite)
        for name in os.listdir(d):
            if name.startswith(base):
                total += os.path.getsize(os.path.join(d, name))
        print(total)
    else:
        out = subprocess.run(["psql", a.postgres, "-Atc", "SELECT pg_database_size(current_database())"],
                             check=True, capture_output=True, text=True).stdout
        print(int(out.strip()))


def main() -> int:
    p = argparse.ArgumentParser()
    sp = p.add_subparsers(dest="cmd", required=True)
    s = sp.add_parser("setup")
    s.add_argument("--base", required=True)
    s.add_argument("--issuer-dir", required=True)
    s.add_argument("--issuer", required=True)
    s.add_argument("--workloads", type=int, default=1000)
    s.add_argument("--state", required=True)
    s.add_argument("--pool", required=True)
    au = sp.add_parser("audit")
    au.add_argument("--base", required=True)
    au.add_argument("--count", type=int, required=True)
    q = sp.add_parser("queries")
    q.add_argument("--base", required=True)
    q.add_argument("--state", required=True)
    q.add_argument("--label", required=True)
    q.add_argument("--timeout", type=float, default=120)
    q.add_argument("--runs", type=int, default=3)
    q.add_argument("--only", default="", help="only the queries whose description starts so (e.g. 'audit:')")
    d = sp.add_parser("dbsize")
    d.add_argument("--sqlite")
    d.add_argument("--postgres")
    a = p.parse_args()
    {"setup": setup, "audit": audit, "queries": queries, "dbsize": dbsize}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
