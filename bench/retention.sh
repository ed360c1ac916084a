#!/usr/bin/env bash
# The server's own retention purge of a day of events, with the edge under an open-loop load
# (issue 34: a day of 10 million events dropped in <= 10 s, the edge's p99 at most 2x meanwhile).
#
#   bench/retention.sh DIR [SVC_BIN]
#
# DIR is the output of `bench/run.sh --events-scale N --keep-data` on SQLite (BENCH_EVENTS_DBS=sqlite)
# or on PostgreSQL (BENCH_EVENTS_DBS=postgres; its database, svc_bench_*, copied as a template in
# the same server, shifted, then vacuumed): its database, request pool and issuer keys. The
# SQLite database is copied (and synced: the first
# checkpoint's fsync would otherwise write the whole copy), shifted two days back (rows, template
# entries, templates' days, audit entries unless BENCH_RETENTION_AUDIT=0), and served by SVC_BIN
# (default target/release/svc) on the fill's own port and public URL (the pool's edge tokens name
# it as issuer) with SVC_EVENTS_RETENTION_DAYS=1, its ID-token issuer served again on its port.
# The server purges BENCH_RETENTION_WAIT seconds after start (900, the server's own delay; only a
# build with another delay makes a shorter wait meaningful). From 30 s before until 40 s after,
# POST /edge/v1/credentials goes out at BENCH_RETENTION_RATE a second (2,000), open loop
# (bench/lib/openloop.py, CPU 1; the server on CPU 0); p50 / p99 / max per 5 s and the purge's
# log lines (rows, ms; on PostgreSQL each day dropped) go to DIR/retention.txt. BENCH_RETENTION_OLD=F (0 < F < 1) shifts the rows
# instead so that the cutoff falls after the first F of them (by time): a purge of part of a
# day, as each hourly purge is, the rest of the day's rows and template entries kept.
set -euo pipefail
DIR=${1:?usage: bench/retention.sh DIR [SVC_BIN]}
BIN=${2:-target/release/svc}
WAIT=${BENCH_RETENTION_WAIT:-900}
RATE=${BENCH_RETENTION_RATE:-2000}
AUDIT=${BENCH_RETENTION_AUDIT:-1}
BENCH=$(cd "$(dirname "$0")" && pwd)
KEY=$(ls "$DIR"/svc-encryption-key-svc_bench_* 2>/dev/null | head -1 || true)
if [[ -n $KEY ]]; then
  KEPT=${KEY##*svc-encryption-key-}
  POOL=$DIR/pool-fleet-postgres.txt
  PG_ADMIN=${BENCH_PG_URL:-${SVC_TEST_POSTGRES_URL:?PostgreSQL: BENCH_PG_URL, or the test peers env}}
else
  POOL=$DIR/pool-fleet-sqlite.txt
  [[ -f $DIR/svc-data/svc.db ]] || { echo "bench/retention.sh: $DIR is not a kept --events-scale run" >&2; exit 2; }
fi
[[ -f $POOL && -d $DIR/issuer ]] || { echo "bench/retention.sh: $DIR is not a kept --events-scale run" >&2; exit 2; }
# The fill's server and issuer, from the pool's first line (token claims).
read -r SVC_URL ISSUER_URL < <(python3 - "$POOL" <<'PY'
import base64, json, sys
auth, body = open(sys.argv[1]).readline().split("\t")[:2]
claims = lambda t: json.loads(base64.urlsafe_b64decode(t.split(".")[1] + "=="))
print(claims(auth.split()[1])["iss"], claims(json.loads(body)["client"]["oidc"]["identityToken"])["iss"])
PY
)
PORT=${SVC_URL##*:}; IPORT=${ISSUER_URL##*:}
WORK=$(mktemp -d /tmp/svc-retention.XXXXXX)
if [[ -n $KEY ]]; then
  WORKDB=svc_retention_$$
  psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $WORKDB" -c "CREATE DATABASE $WORKDB TEMPLATE $KEPT" >/dev/null
  DB_URL=${PG_ADMIN%/*}/$WORKDB
  DB_ENV=(SVC_ENCRYPTION_KEY="$(cat "$KEY")")
  trap 'psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $WORKDB" >/dev/null 2>&1 || true' EXIT
  python3 "$BENCH/lib/retention_shift.py" postgres "$DB_URL" "$AUDIT" "${BENCH_RETENTION_OLD:-}" "$WAIT"
else
  DB_URL=sqlite://$WORK/svc.db
  DB_ENV=()
  cp "$DIR/svc-data/svc.db" "$DIR/svc-data/svc-encryption.key" "$WORK/"
  python3 "$BENCH/lib/retention_shift.py" sqlite "$WORK/svc.db" "$AUDIT" "${BENCH_RETENTION_OLD:-}" "$WAIT"
  sync
fi
taskset -c 1 python3 "$BENCH/lib/issuer.py" serve "$DIR/issuer" "$IPORT" >"$WORK/issuer.log" 2>&1 &
ISSUER=$!
env "${DB_ENV[@]}" SVC_DATABASE_URL="$DB_URL" SVC_LISTEN_ADDR="127.0.0.1:$PORT" SVC_PUBLIC_URL="$SVC_URL" \
  SVC_BOOTSTRAP_ADMIN_EMAIL=bench@svc.test SVC_BOOTSTRAP_ADMIN_PASSWORD=bench-password-0123456789 \
  SVC_ALLOW_INSECURE_UPSTREAM=true SVC_TRUSTED_PROXIES=127.0.0.1/32 SVC_METRICS_LISTEN_ADDR= \
  SVC_EDGE_TOKEN_TTL_SECONDS=86400 SVC_EDGE_CREDENTIALS_RATE=10000000 SVC_EDGE_CREDENTIALS_BURST=10000000 \
  SVC_EVENTS_RETENTION_DAYS=1 RUST_LOG=info \
  taskset -c 0 "$BIN" serve >"$WORK/svc.log" 2>&1 &
SVC=$!
trap 'kill $SVC $ISSUER 2>/dev/null || true; wait $SVC 2>/dev/null || true; rm -rf "$WORK"; [[ -z ${WORKDB:-} ]] || psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $WORKDB" >/dev/null 2>&1 || true' EXIT
START=$(date +%s)
for _ in $(seq 1 100); do curl -sf "$SVC_URL/api/v1/health" >/dev/null 2>&1 && break; sleep 0.3; done
sleep $((WAIT - 30 - ($(date +%s) - START)))
{
  echo "# bench/retention.sh $DIR $BIN: purge $WAIT s after start, load from 30 s before, $RATE /credentials a second"
  taskset -c 1 python3 "$BENCH/lib/openloop.py" "$SVC_URL" "$POOL" "$RATE" 70 5
  grep -hE "event retention purged|partition of a day|detached before" "$WORK/svc.log" || echo "no purge logged"
} | tee "$DIR/retention.txt"
