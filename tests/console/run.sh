#!/usr/bin/env bash
# The console's browser tests (docs/TESTING.md, stage `console` of scripts/test.sh).
#
#   tests/console/run.sh            needs the peers (SVC_TEST_OAUTH2_MOCK_URL from scripts/peers.sh)
#
# Installs what is missing: Debian's chromium (apt-get, as scripts/peers.sh installs PostgreSQL;
# never a browser download), playwright-core from package-lock.json into
# ${SVC_CONSOLE_CACHE:-~/.cache/svc-console}/npm. Builds the debug `svc` unless
# SVC_CONSOLE_SVC_BIN names one. Screenshots: target/console-screenshots/, the server's log:
# target/console-svc.log.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CACHE=$(realpath -m "${SVC_CONSOLE_CACHE:-$HOME/.cache/svc-console}")
NPM_DIR=$CACHE/npm
log() { printf '[console] %s\n' "$*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

[[ -n ${SVC_TEST_OAUTH2_MOCK_URL:-} ]] ||
  die "SVC_TEST_OAUTH2_MOCK_URL is not set: start the peers (scripts/peers.sh start; source target/peers-run/env)"

CHROMIUM=${SVC_CONSOLE_CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $CHROMIUM ]]; then
  [[ $(id -u) -eq 0 ]] || die "$CHROMIUM is missing: apt-get install chromium (needs root)"
  log "apt-get install chromium"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  [[ $(id -u) -eq 0 ]] || die "node and npm are missing: apt-get install nodejs npm"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
want=$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ ! -f $NPM_DIR/.stamp || $(<"$NPM_DIR/.stamp") != "$want" || ! -d $NPM_DIR/node_modules/playwright-core ]]; then
  log "installing playwright-core into $NPM_DIR (npm ci; no browser is downloaded)"
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$NPM_DIR/"
  (cd "$NPM_DIR" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  printf '%s' "$want" >"$NPM_DIR/.stamp"
fi
flock -u 9

TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
if [[ -z ${SVC_CONSOLE_SVC_BIN:-} ]]; then
  (cd "$ROOT" && cargo build -q -p svc-server --bin svc)
  SVC_CONSOLE_SVC_BIN=$TARGET/debug/svc
fi
mkdir -p "$TARGET/console-screenshots"

# Only the variables the test reads: the server it starts gets its own environment.
exec env SVC_CONSOLE_SVC_BIN="$SVC_CONSOLE_SVC_BIN" SVC_CONSOLE_NODE_MODULES="$NPM_DIR/node_modules" \
  SVC_CONSOLE_SHOTS="$TARGET/console-screenshots" SVC_CONSOLE_CHROMIUM="$CHROMIUM" \
  node --test --test-reporter=spec --test-concurrency=1 --test-timeout=120000 "$HERE/console.test.mjs"
