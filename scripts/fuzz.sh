#!/usr/bin/env bash
# The OpenAPI document, validated and fuzzed (issue 22; a stage of scripts/test.sh, see
# docs/TESTING.md):
#
#   scripts/fuzz.sh [SVC_BIN]
#
# Starts SVC_BIN (default: builds and uses target/debug/svc) on a free loopback port with a fresh
# SQLite database and a bootstrap administrator, then
#   1. validates GET /api/openapi.json with openapi-spec-validator (OpenAPI 3.1);
#   2. runs schemathesis against the server, signed in as the administrator: no 5xx, every
#      status, content type and body as the document says (checks not_a_server_error,
#      status_code_conformance, content_type_conformance, response_schema_conformance), seeded;
#   3. counts the requests the server logged and fails under SVC_FUZZ_MIN_REQUESTS (5000).
# Before the fuzzing, a client generated from the document by openapi-python-client (pinned, in a
# venv of its own under the peers' cache, made here on first use) runs scripts/client_flow.py:
# sign in, create a trust provider, client and server workloads, a credential provider and a
# policy, read them back, list the authorization events; every answer parsed by the generated
# models. schemathesis and openapi-spec-validator come from the peers' venv (scripts/peers.sh
# installs them, pinned).
#
# Environment: SVC_PEERS_CACHE (the venv's cache, as peers.sh), SVC_FUZZ_SEED (default 22),
# SVC_FUZZ_EXAMPLES (test cases per operation and phase, default 25), SVC_FUZZ_MIN_REQUESTS
# (default 5000), SVC_FUZZ_TIMEOUT (seconds for schemathesis, default 240), SVC_FUZZ_OUT (where
# the server log and schemathesis' reports go; default target/fuzz).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=$(realpath -m "${SVC_PEERS_CACHE:-$HOME/.cache/svc-peers}")
VENV=$CACHE/venv
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$(realpath -m "${SVC_FUZZ_OUT:-$TARGET/fuzz}")
SEED=${SVC_FUZZ_SEED:-22}
EXAMPLES=${SVC_FUZZ_EXAMPLES:-25}
MIN_REQUESTS=${SVC_FUZZ_MIN_REQUESTS:-5000}
FUZZ_TIMEOUT=${SVC_FUZZ_TIMEOUT:-240}
EMAIL=fuzz-admin@svc.test
PASSWORD=fuzz-admin-password-22

log() { printf '[fuzz] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

[[ -x $VENV/bin/schemathesis && -x $VENV/bin/openapi-spec-validator ]] ||
  die "schemathesis / openapi-spec-validator missing in $VENV: run scripts/peers.sh start (it installs them)"

# The client generator's venv (not the peers': changing that one reinstalls it under running peers).
GEN_PACKAGE="openapi-python-client==0.29.1"
GEN_VENV=$CACHE/client-venv
if [[ ! -x $GEN_VENV/bin/openapi-python-client || $(cat "$GEN_VENV/.svc-stamp" 2>/dev/null) != "$GEN_PACKAGE" ]]; then
  log "creating $GEN_VENV ($GEN_PACKAGE)"
  rm -rf "$GEN_VENV"
  "$VENV/bin/python" -m venv "$GEN_VENV"
  "$GEN_VENV/bin/pip" install -q --disable-pip-version-check "$GEN_PACKAGE"
  echo "$GEN_PACKAGE" >"$GEN_VENV/.svc-stamp"
fi

SVC_BIN=${1:-}
if [[ -z $SVC_BIN ]]; then
  (cd "$ROOT" && cargo build -q -p svc-server --bin svc)
  SVC_BIN=$TARGET/debug/svc
fi

rm -rf "$OUT"
mkdir -p "$OUT/data"
PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
BASE=http://127.0.0.1:$PORT

SVC_PID=
cleanup() {
  if [[ -n $SVC_PID ]] && kill -0 "$SVC_PID" 2>/dev/null; then
    kill "$SVC_PID" 2>/dev/null || true
    wait "$SVC_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# Only the server's own keys: it warns about SVC_* variables it does not know.
env -u SVC_PEERS_CACHE -u SVC_FUZZ_SEED -u SVC_FUZZ_EXAMPLES -u SVC_FUZZ_MIN_REQUESTS \
  -u SVC_FUZZ_TIMEOUT -u SVC_FUZZ_OUT \
  SVC_DATABASE_URL="sqlite://$OUT/data/svc.db" SVC_LISTEN_ADDR="127.0.0.1:$PORT" SVC_PUBLIC_URL="$BASE" \
  SVC_BOOTSTRAP_ADMIN_EMAIL=$EMAIL SVC_BOOTSTRAP_ADMIN_PASSWORD=$PASSWORD SVC_METRICS_LISTEN_ADDR= \
  SVC_LOG='svc_server::http=debug,info' SVC_LOG_FORMAT=text \
  "$SVC_BIN" serve >"$OUT/server.log" 2>&1 &
SVC_PID=$!

deadline=$((SECONDS + 60))
until curl -s -o /dev/null "$BASE/api/v1/health"; do
  kill -0 "$SVC_PID" 2>/dev/null || {
    tail -n 30 "$OUT/server.log" >&2
    die "svc exited before answering"
  }
  ((SECONDS < deadline)) || die "svc did not answer on $BASE within 60 s"
  sleep 0.2
done

log "validating $BASE/api/openapi.json (openapi-spec-validator)"
curl -sf "$BASE/api/openapi.json" -o "$OUT/openapi.json"
"$VENV/bin/openapi-spec-validator" --schema 3.1.0 "$OUT/openapi.json"

log "generating a Python client from the document (openapi-python-client) and running its flow"
mkdir -p "$OUT/client"
printf 'post_hooks: []\n' >"$OUT/client/config.yml"
"$GEN_VENV/bin/openapi-python-client" generate --path "$OUT/openapi.json" --meta none \
  --config "$OUT/client/config.yml" --output-path "$OUT/client/svc_client" >"$OUT/client/generate.log" 2>&1 ||
  die "openapi-python-client could not generate a client: $OUT/client/generate.log"
# The trust provider's issuer is never fetched by the flow (a reserved .test name).
"$GEN_VENV/bin/python" "$ROOT/scripts/client_flow.py" "$OUT/client" "$BASE" "$EMAIL" "$PASSWORD" \
  https://flow-issuer.svc.test | tee "$OUT/client/flow.log" >&2 ||
  die "the generated client's flow failed: $OUT/client/flow.log"
flow=$(sed -n 's/^client-flow: \([0-9]*\) operations$/\1/p' "$OUT/client/flow.log")

TOKEN=$(curl -sf "$BASE/api/v1/login" -H 'content-type: application/json' \
  -d "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}" |
  "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["accessToken"])')

# POST /api/v1/me/sign-out is left out: it would end the session every later request uses.
log "schemathesis: seed $SEED, $EXAMPLES examples per operation, at most ${FUZZ_TIMEOUT}s"
rc=0
cd "$OUT" # schemathesis keeps its cache in the working directory
timeout "$FUZZ_TIMEOUT" "$VENV/bin/schemathesis" run "$BASE/api/openapi.json" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --phases examples,coverage,fuzzing \
  --max-examples "$EXAMPLES" --seed "$SEED" --workers 1 --no-color \
  --header "Authorization: Bearer $TOKEN" \
  --exclude-path /api/v1/me/sign-out \
  --request-timeout 10 --suppress-health-check all --warnings off \
  --report junit,ndjson --report-dir "$OUT/report" || rc=$?

# One access-log line per request (svc_server::http at debug): `request request_id=… status=…`.
requests=$(grep -c ' request request_id=' "$OUT/server.log" || true)
fivexx=$(grep -E ' request request_id=' "$OUT/server.log" | grep -cE ' status=5[0-9][0-9]( |$)' || true)
log "the server answered $requests requests ($fivexx with a 5xx)"
if ((rc == 124)); then die "schemathesis did not finish within ${FUZZ_TIMEOUT}s"; fi
if ((rc != 0)); then die "schemathesis found failures (exit $rc); server log: $OUT/server.log"; fi
((fivexx == 0)) || die "the server answered $fivexx requests with a 5xx"
((requests >= MIN_REQUESTS)) || die "only $requests requests (at least $MIN_REQUESTS wanted): raise SVC_FUZZ_EXAMPLES"
echo "fuzz: $requests requests, 0 failures; generated client: $flow operations"
