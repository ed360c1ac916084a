#!/usr/bin/env python3
"""Drives Svc for the benchmark through its public APIs only (management API and Edge API).

    svcbench.py configure --base URL --issuer URL --state FILE
        Signs in as the bootstrap administrator and creates the contract §6 worked example for the
        benchmark workload: an OidcIdToken trust provider on the loopback issuer, the client workload
        `bench-job` (oidcIdTokenSubject), the server workload api.partner.example:443, an apikey
        credential provider and the one access policy joining them; plus the providers the unrelated
        policies use.
        With --conditions CC NAME SUB SUBNAME, also the server workload cond.partner.example:443 and
        a second policy to it (same client workload, trust provider and apikey provider) carrying
        two access conditions that pass for the benchmark's requests: an SvcTimeCondition open
        every day 00:00-24:00 UTC and an SvcGeoIPCondition for country CC (English name NAME),
        subdivision CC-SUB (named SUBNAME), both on the resource set's built-in integrations.
    svcbench.py load --base URL --state FILE --policies N [--workers W]
        Adds unrelated policies until N policies exist in total. Each unrelated policy gets its own
        client workload (its own oidcIdTokenSubject) and its own server workload (its own host), so
        every pair holds at most one active policy, through POST /api/v1/client-workloads,
        /api/v1/server-workloads and /api/v2/access-policies, W requests in flight.
    svcbench.py auth-pool --state FILE --id-tokens FILE --out FILE
        One /edge/v1/auth request body per ID token (wrk pool: "<header>\\t<body>" lines).
    svcbench.py cred-pool --base URL --state FILE --id-tokens FILE --count N --out FILE [--cond-out FILE]
        N distinct edge access tokens from /edge/v1/auth, one /edge/v1/credentials request per line.
        --cond-out (after configure --conditions): the same requests for cond.partner.example, the
        server workload whose policy has conditions; checks that one of them is answered and that
        its authorization event records both conditions as Passed.
    svcbench.py bao-pool --id-tokens FILE --role NAME --out FILE
        One OpenBao jwt login body per ID token.
    svcbench.py bao-configure --addr URL --issuer URL --aud AUD --pubkey PEM --id-tokens FILE
        Configures an OpenBao dev server (root token `root`): jwt auth with the issuer's public key
        and a role `bench` (batch tokens), the secret secret/bench/partner-key in kv-v2, a policy
        reading only secret/data/bench/*, and prints a token holding just that policy. Checks one
        jwt login and one kv read.
    svcbench.py wait-healthy --base URL --since-ns NS --timeout S
        Polls GET /api/v1/health every 5 ms until its status is Healthy; prints the seconds since NS
        (a `date +%s%N` taken just before the process was started).
    svcbench.py mem --pid PID
        Prints VmHWM and VmRSS of a process in MiB, as JSON.
"""
import argparse
import http.client
import json
import queue
import sys
import threading
import time
import urllib.parse

ADMIN_EMAIL = "bench@svc.test"
ADMIN_PASSWORD = "bench-password-0123456789"
SUBJECT = "system:job:bench"
TARGET_HOST = "api.partner.example"
COND_HOST = "cond.partner.example"
WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
UNRELATED_PROVIDERS = 10


class Api:
    """A keep-alive connection to Svc with the JSON helpers the benchmark needs."""

    def __init__(self, base: str, token: str | None = None):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port
        self.token = token
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def call(self, method: str, path: str, body=None, headers=None, expect=(200, 201, 204)):
        h = {"content-type": "application/json"}
        if self.token:
            h["authorization"] = f"Bearer {self.token}"
        h.update(headers or {})
        data = None if body is None else json.dumps(body, separators=(",", ":"))
        for attempt in range(3):
            try:
                self.conn.request(method, path, body=data, headers=h)
                r = self.conn.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt == 2:
                    raise
        if r.status not in expect:
            raise SystemExit(f"svcbench: {method} {path} -> {r.status}: {raw[:500]!r}")
        return r, (json.loads(raw) if raw else None)


def login(base: str) -> str:
    _, body = Api(base).call("POST", "/api/v1/login", {"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
    return body["accessToken"]


def location_id(r) -> str:
    return r.getheader("location").rstrip("/").rsplit("/", 1)[1]


def apikey_provider(api: Api, name: str, key: str) -> str:
    _, b = api.call("POST", "/api/v2/credential-providers",
                    {"type": "apikey", "name": name, "isActive": True, "apiKey": key})
    return b["externalId"]


def client_workload(api: Api, name: str, subject: str) -> str:
    r, _ = api.call("POST", "/api/v1/client-workloads",
                    {"name": name, "isActive": True,
                     "identities": [{"type": "oidcIdTokenSubject", "value": subject}]})
    return location_id(r)


def server_workload(api: Api, name: str, host: str) -> str:
    r, _ = api.call("POST", "/api/v1/server-workloads", {
        "name": name, "isActive": True,
        "serviceEndpoint": {"host": host, "port": 443, "appProtocol": "HTTP", "transportProtocol": "TCP",
                            "requestedPort": 443, "requestedTls": True, "tls": True, "tlsVerification": "full",
                            "workloadServiceAuthentication": {"method": "API Key", "scheme": "Header",
                                                              "config": "X-Api-Key"}}})
    return location_id(r)


def policy(api: Api, name: str, cw: str, sw: str, tps: list, cp: str, conditions: tuple = ()) -> str:
    _, b = api.call("POST", "/api/v2/access-policies", {
        "name": name, "isActive": True, "clientWorkload": cw, "serverWorkload": sw,
        "trustProviders": tps, "accessConditions": list(conditions), "contentSecurity": [],
        "credentialProviders": [{"credentialProviderId": cp, "mappingType": "None"}]})
    return b["externalId"]


def configure(a) -> None:
    token = login(a.base)
    api = Api(a.base, token)
    _, tp = api.call("POST", "/api/v1/trust-providers", {
        "name": "bench-issuer", "isActive": True, "provider": "OidcIdToken", "oidcUrl": a.issuer,
        "matchRules": [{"attribute": "OidcIssuer", "value": a.issuer},
                       {"attribute": "OidcSubject", "value": SUBJECT}]})
    cw = client_workload(api, "bench-job", SUBJECT)
    sw = server_workload(api, "partner-api", TARGET_HOST)
    cp = apikey_provider(api, "partner-key", "pk_bench_0123456789")
    pol = policy(api, "bench-job to partner-api", cw, sw, [tp["externalId"]], cp)
    others = [apikey_provider(api, f"unrelated-key-{i}", f"uk_{i:04d}_abcdefghij") for i in range(UNRELATED_PROVIDERS)]
    state = {"base": a.base, "issuer": a.issuer, "trustProvider": tp["externalId"],
             "clientId": tp["edgeSdkClientId"], "clientWorkload": cw, "serverWorkload": sw,
             "credentialProvider": cp, "policy": pol, "unrelatedProviders": others, "policies": 1}
    if a.conditions:
        state.update(with_conditions(api, a.conditions, cw, tp["externalId"], cp))
    with open(a.state, "w") as f:
        json.dump(state, f, indent=1)
    print(f"configured: trust provider {tp['externalId']}, policy {pol}")


def builtin_integration(api: Api, integration_type: str) -> str:
    """The resource set's built-in integration of a type (§3.11: `GeoIP`, `Time`)."""
    _, b = api.call("GET", f"/api/v2/integrations?filter=integrationType:{integration_type}", expect=(200,))
    return b["integrations"][0]["externalId"]


def with_conditions(api: Api, geo: list, cw: str, tp: str, cp: str) -> dict:
    """The second benchmark policy, to COND_HOST, with a time and a GeoIP condition (§3.10 v2)."""
    country, country_name, sub, sub_name = geo
    _, t = api.call("POST", "/api/v2/access-conditions", {
        "name": "bench: every day, all day", "isActive": True, "integrationType": "SvcTimeCondition",
        "integrationID": builtin_integration(api, "SvcTimeCondition"),
        "schedule": [{"startTime": "00:00", "endTime": "24:00", "weekDay": {"name": d, "ordinal": i}}
                     for i, d in enumerate(WEEKDAYS)],
        "timezone": {"timezone": "UTC"}})
    _, g = api.call("POST", "/api/v2/access-conditions", {
        "name": f"bench: from {country}-{sub}", "isActive": True, "integrationType": "SvcGeoIPCondition",
        "integrationID": builtin_integration(api, "SvcGeoIPCondition"),
        "locations": [{"shortName": country_name, "alpha2Code": country,
                       "subdivisions": [{"name": sub_name, "subdivisionCode": f"{country}-{sub}"}]}]})
    conds = [t["externalId"], g["externalId"]]
    sw = server_workload(api, "partner-api-conditions", COND_HOST)
    pol = policy(api, "bench-job to partner-api-conditions", cw, sw, [tp], cp, conds)
    return {"conditions": conds, "conditionsPolicy": pol, "policies": 2}


def load(a) -> None:
    with open(a.state) as f:
        state = json.load(f)
    have, want = state["policies"], a.policies
    if want <= have:
        return
    token = login(a.base)
    work: queue.Queue = queue.Queue()
    for i in range(have, want):
        work.put(i)
    errors: list = []
    done = [0]
    lock = threading.Lock()
    tp = state["trustProvider"]
    provs = state["unrelatedProviders"]

    def worker():
        api = Api(a.base, token)
        while True:
            try:
                i = work.get_nowait()
            except queue.Empty:
                return
            try:
                cw = client_workload(api, f"unrelated-job-{i:06d}", f"system:job:unrelated-{i:06d}")
                sw = server_workload(api, f"unrelated-api-{i:06d}", f"api-{i:06d}.unrelated.example")
                # A realistic mix: most policies name a trust provider, some none.
                policy(api, f"unrelated-{i:06d}", cw, sw, [tp] if i % 4 else [], provs[i % len(provs)])
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return
            with lock:
                done[0] += 1

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(a.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"svcbench: loading failed: {errors[0]}")
    state["policies"] = want
    with open(a.state, "w") as f:
        json.dump(state, f, indent=1)
    dt = time.monotonic() - t0
    print(json.dumps({"policies": want, "added": done[0], "seconds": round(dt, 2),
                      "writes_per_s": round(3 * done[0] / dt, 1)}))


def agent_targets(a) -> None:
    """`count` more server workloads (agent-NNN.bench.example:443), each with a policy from the
    bench job to it and the partner key: the entries one svc-edge agent holds."""
    with open(a.state) as f:
        state = json.load(f)
    api = Api(a.base, login(a.base))
    hosts = []
    for i in range(a.count):
        host = f"agent-{i:03d}.bench.example"
        sw = server_workload(api, f"agent-target-{i:03d}", host)
        policy(api, f"bench-job to agent-target-{i:03d}", state["clientWorkload"], sw,
               [state["trustProvider"]], state["credentialProvider"])
        hosts.append(host)
    with open(a.out, "w") as f:
        f.write("\n".join(hosts) + "\n")
    print(f"{len(hosts)} agent targets")


def edge_requests(a) -> None:
    """Edge requests recorded in the database: `/auth` and `/credentials` calls (one
    `access.authentication` / `access.request` event each)."""
    import sqlite3
    c = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True, timeout=30)
    try:
        n = dict(c.execute("SELECT event_type, count(*) FROM authorization_events "
                           "WHERE event_type IN ('access.authentication', 'access.request') "
                           "GROUP BY event_type").fetchall())
    finally:
        c.close()
    print(n.get("access.authentication", 0), n.get("access.request", 0))


def read_lines(path: str) -> list:
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def compact(o) -> str:
    return json.dumps(o, separators=(",", ":"))


def auth_body(state: dict, id_token: str) -> str:
    return compact({"clientId": state["clientId"], "client": {"oidc": {"identityToken": id_token}}})


def auth_pool(a) -> None:
    with open(a.state) as f:
        state = json.load(f)
    with open(a.out, "w") as f:
        for t in read_lines(a.id_tokens):
            f.write("\t" + auth_body(state, t) + "\n")


def cred_pool(a) -> None:
    with open(a.state) as f:
        state = json.load(f)
    ids = read_lines(a.id_tokens)
    api = Api(a.base)
    with open(a.out, "w") as f:
        for i in range(a.count):
            t = ids[i % len(ids)]
            api.conn.request("POST", "/edge/v1/auth", body=auth_body(state, t),
                             headers={"content-type": "application/json"})
            r = api.conn.getresponse()
            raw = r.read()
            if r.status != 200:
                raise SystemExit(f"svcbench: /edge/v1/auth -> {r.status}: {raw[:300]!r}")
            tok = json.loads(raw)["accessToken"]
            body = compact({"client": {"oidc": {"identityToken": t}},
                            "server": {"transportProtocol": "TCP", "host": TARGET_HOST, "port": 443},
                            "credentialType": "ApiKey"})
            f.write(f"Bearer {tok}\t{body}\n")
    # One request through the pool's first line proves the credential comes back.
    first = read_lines(a.out)[0].split("\t")
    check_credentials(api, *first)
    if not a.cond_out:
        return
    # The same requests for the server workload whose policy carries the conditions.
    with open(a.out) as src, open(a.cond_out, "w") as f:
        for line in src:
            f.write(line.replace(f'"host":"{TARGET_HOST}"', f'"host":"{COND_HOST}"'))
    first = read_lines(a.cond_out)[0].split("\t")
    check_credentials(api, *first, what=f"{COND_HOST} (policy with conditions)")
    # Its decision evaluated both conditions and both passed.
    admin = Api(a.base, login(a.base))
    _, b = admin.call("GET", "/api/v1/authorization-events?per-page=1&event-type=access.authorization", expect=(200,))
    ev = b["authorizationEvents"][0]
    got = {c.get("id"): c.get("result") for c in ev.get("accessConditions") or []}
    if got != {c: "Passed" for c in state["conditions"]}:
        raise SystemExit(f"svcbench: the conditions' results in the last authorization event are {got}, "
                         f"want both of {state['conditions']} Passed: {compact(ev)[:600]}")


def check_credentials(api: Api, authorization: str, body: str, what: str = TARGET_HOST) -> None:
    """One request through a pool line proves the credential comes back."""
    api.conn.request("POST", "/edge/v1/credentials", body=body,
                     headers={"content-type": "application/json", "authorization": authorization})
    r = api.conn.getresponse()
    raw = r.read()
    if r.status != 200 or json.loads(raw).get("credentialType") != "ApiKey":
        raise SystemExit(f"svcbench: /edge/v1/credentials for {what} -> {r.status}: {raw[:300]!r}")


def bao_pool(a) -> None:
    with open(a.out, "w") as f:
        for t in read_lines(a.id_tokens):
            f.write("\t" + compact({"role": a.role, "jwt": t}) + "\n")


def bao_configure(a) -> None:
    api = Api(a.addr)

    def call(method, path, body=None, token="root", expect=(200, 204)):
        r, b = api.call(method, path, body, headers={"x-vault-token": token} if token else {}, expect=expect)
        return b

    with open(a.pubkey) as f:
        pem = f.read()
    call("POST", "/v1/sys/auth/jwt", {"type": "jwt"})
    call("POST", "/v1/auth/jwt/config", {"jwt_validation_pubkeys": [pem], "bound_issuer": a.issuer})
    call("POST", "/v1/auth/jwt/role/bench", {
        "role_type": "jwt", "bound_audiences": [a.aud], "user_claim": "sub", "bound_subject": SUBJECT,
        "token_policies": ["bench-read"], "token_type": "batch", "token_ttl": "1h"})
    call("PUT", "/v1/sys/policies/acl/bench-read",
         {"policy": 'path "secret/data/bench/*" { capabilities = ["read"] }'})
    call("POST", "/v1/secret/data/bench/partner-key", {"data": {"apiKey": "pk_bench_0123456789"}})
    tok = call("POST", "/v1/auth/token/create", {"policies": ["bench-read"], "ttl": "2h"})["auth"]["client_token"]
    got = call("GET", "/v1/secret/data/bench/partner-key", token=tok, expect=(200,))
    assert got["data"]["data"]["apiKey"] == "pk_bench_0123456789", got
    call("GET", "/v1/secret/data/other", token=tok, expect=(403,))
    first = read_lines(a.id_tokens)[0]
    login = call("POST", "/v1/auth/jwt/login", {"role": "bench", "jwt": first}, token=None, expect=(200,))
    assert "bench-read" in login["auth"]["policies"], login
    print(tok)


def wait_healthy(a) -> None:
    u = urllib.parse.urlsplit(a.base)
    deadline = time.monotonic() + a.timeout
    while time.monotonic() < deadline:
        try:
            c = http.client.HTTPConnection(u.hostname, u.port, timeout=2)
            c.request("GET", "/api/v1/health")
            r = c.getresponse()
            body = r.read()
            c.close()
            if r.status == 200 and json.loads(body).get("status") == "Healthy":
                print(f"{(time.time_ns() - a.since_ns) / 1e9:.3f}")
                return
        except (OSError, http.client.HTTPException, ValueError):
            pass
        time.sleep(0.005)
    raise SystemExit(f"svcbench: {a.base} not healthy within {a.timeout}s")


def mem(a) -> None:
    out = {}
    with open(f"/proc/{a.pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = round(int(v.split()[0]) / 1024, 1)
    print(json.dumps(out))


def stream(a) -> None:
    """--stream: one HEC log stream of the authorization events to the loopback sink (active, or
    with --inactive created inactive, its cursor at its creation, and its id printed as JSON)."""
    api = Api(a.base, login(a.base))
    _, b = api.call("POST", "/api/v1/log-streams", {
        "type": "LogAnalyticsAHttpEventCollector", "name": "bench-hec", "isActive": not a.inactive,
        "dataType": "AccessAuthorizationEvents", "hecHostPort": a.hec, "hecSourceName": "svc-bench",
        "authenticationToken": "0f8fad5b-d9cb-469f-a165-70867728950e", "tls": False})
    if a.inactive:
        print(json.dumps({"stream": b["externalId"]}))
    else:
        print(f"log stream {b['externalId']} -> {a.hec}")


def stream_activate(a) -> None:
    """Activates the stream `stream --inactive` created: it delivers its backlog (issue 34)."""
    with open(a.state) as f:
        sid = json.load(f)["stream"]
    api = Api(a.base, login(a.base))
    api.call("PATCH", f"/api/v1/log-streams/{sid}", {"isActive": True}, expect=(200,))
    print(f"log stream {sid} activated", file=sys.stderr)


def stream_wait(a) -> None:
    """Polls the HEC sink until it has `events` records; prints {events, seconds, per_second}
    counted from `since_ns` (a `date +%s%N`)."""
    host, port = a.hec.split(":")
    deadline = time.monotonic() + a.timeout
    n = 0
    while time.monotonic() < deadline:
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        c.request("GET", "/stats")
        n = json.loads(c.getresponse().read())["events"]
        c.close()
        if n >= a.events:
            break
        time.sleep(0.2)
    secs = (time.time_ns() - a.since_ns) / 1e9
    print(json.dumps({"events": n, "expected": a.events, "seconds": round(secs, 1),
                      "per_second": round(n / secs) if secs > 0 else None}))
    if n < a.events:
        raise SystemExit(1)


def main() -> int:
    p = argparse.ArgumentParser()
    sp = p.add_subparsers(dest="cmd", required=True)
    c = sp.add_parser("configure")
    c.add_argument("--base", required=True)
    c.add_argument("--issuer", required=True)
    c.add_argument("--state", required=True)
    c.add_argument("--conditions", nargs=4, metavar=("CC", "NAME", "SUB", "SUBNAME"))
    ld = sp.add_parser("load")
    ld.add_argument("--base", required=True)
    ld.add_argument("--state", required=True)
    ld.add_argument("--policies", type=int, required=True)
    ld.add_argument("--workers", type=int, default=8)
    ap = sp.add_parser("auth-pool")
    ap.add_argument("--state", required=True)
    ap.add_argument("--id-tokens", required=True)
    ap.add_argument("--out", required=True)
    cp = sp.add_parser("cred-pool")
    cp.add_argument("--base", required=True)
    cp.add_argument("--state", required=True)
    cp.add_argument("--id-tokens", required=True)
    cp.add_argument("--count", type=int, required=True)
    cp.add_argument("--out", required=True)
    cp.add_argument("--cond-out")
    bp = sp.add_parser("bao-pool")
    bp.add_argument("--id-tokens", required=True)
    bp.add_argument("--role", required=True)
    bp.add_argument("--out", required=True)
    bc = sp.add_parser("bao-configure")
    bc.add_argument("--addr", required=True)
    bc.add_argument("--issuer", required=True)
    bc.add_argument("--aud", required=True)
    bc.add_argument("--pubkey", required=True)
    bc.add_argument("--id-tokens", required=True)
    w = sp.add_parser("wait-healthy")
    w.add_argument("--base", required=True)
    w.add_argument("--since-ns", type=int, required=True)
    w.add_argument("--timeout", type=float, default=60)
    at = sp.add_parser("agent-targets")
    at.add_argument("--base", required=True)
    at.add_argument("--state", required=True)
    at.add_argument("--count", type=int, required=True)
    at.add_argument("--out", required=True)
    er = sp.add_parser("edge-requests")
    er.add_argument("--db", required=True)
    sa = sp.add_parser("stream-activate")
    sa.add_argument("--base", required=True)
    sa.add_argument("--state", required=True)
    sw = sp.add_parser("stream-wait")
    sw.add_argument("--hec", required=True)
    sw.add_argument("--events", type=int, required=True)
    sw.add_argument("--since-ns", type=int, required=True)
    sw.add_argument("--timeout", type=float, default=3600)
    st = sp.add_parser("stream")
    st.add_argument("--inactive", action="store_true")
    st.add_argument("--base", required=True)
    st.add_argument("--hec", required=True)
    m = sp.add_parser("mem")
    m.add_argument("--pid", required=True)
    a = p.parse_args()
    {"configure": configure, "load": load, "auth-pool": auth_pool, "cred-pool": cred_pool,
     "bao-pool": bao_pool, "bao-configure": bao_configure, "wait-healthy": wait_healthy, "mem": mem,
     "agent-targets": agent_targets, "edge-requests": edge_requests, "stream": stream,
     "stream-activate": stream_activate, "stream-wait": stream_wait}[a.cmd](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
