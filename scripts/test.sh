#!/usr/bin/env bash
# The one test command (README, .ci/run). See docs/TESTING.md.
#
#   scripts/test.sh [--quick] [--no-bench] [-- ARGS...]
#
# Stages, in order; the first failure stops the run and is named at the end:
#   peers      scripts/peers.sh start + check (stopped again on exit, whatever happens)
#   fmt        cargo fmt --all -- --check                           (skipped with --quick)
#   clippy     cargo clippy --workspace --all-targets -- -D warnings (skipped with --quick)
#   test-sqlite    cargo test --workspace ARGS      with SVC_TEST_DATABASE unset (SQLite)
#   test-postgres  cargo test --workspace --test it ARGS   with SVC_TEST_DATABASE=postgres
#   console        tests/console/run.sh: the console in Debian's chromium (playwright-core) against a
#                  debug svc on SQLite, screenshots in target/console-screenshots (~30 s; skipped
#                  with a test filter)
#   openapi        scripts/fuzz.sh: GET /api/openapi.json validated (openapi-spec-validator), a
#                  client generated from it (openapi-python-client) runs scripts/client_flow.py,
#                  then schemathesis against a debug svc (seeded, >= 5000 requests, ~2-4 min;
#                  skipped with --quick or with a test filter)
#   bench-smoke    bench/run.sh --smoke with the debug svc (~45 s; skipped with --quick or
#                  --no-bench): the benchmark harness still runs end to end; judges nothing
#
# ARGS after `--` go to both `cargo test` runs as they are: a test-name filter
# (`scripts/test.sh --quick -- oidc`), or test-binary flags after a second `--`
# (`scripts/test.sh -- -- --nocapture`).
#
# The peers of this run live in $SVC_PEERS_RUN (default target/peers-run-test), apart from the
# ones a developer may have started by hand in target/peers-run. SVC_PEERS_CACHE and
# SVC_PEERS_TIMEOUT are passed on to scripts/peers.sh as well.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

QUICK=0
BENCH=1
EXTRA=()
while (($#)); do
  case $1 in
  --quick) QUICK=1 ;;
  --no-bench) BENCH=0 ;;
  -h | --help)
    usage
    exit 0
    ;;
  --)
    shift
    EXTRA=("$@")
    break
    ;;
  *)
    echo "scripts/test.sh: unknown argument '$1' (cargo test arguments go after --)" >&2
    usage >&2
    exit 2
    ;;
  esac
  shift
done

# Cargo output: colours only on a terminal (never in CI logs), backtraces on panics.
if [[ -n ${CI:-} ]]; then
  export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
  export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0} # CI builds from scratch: incremental only costs
else
  export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-auto}
fi
export RUST_BACKTRACE=${RUST_BACKTRACE:-1}

# peers.sh's settings are handed to peers.sh only: the server under test warns about SVC_*
# variables it does not know (SVC_TEST_* excepted), so none of these reach cargo.
PEERS_ENV=(
  "SVC_PEERS_RUN=${SVC_PEERS_RUN:-$ROOT/target/peers-run-test}"
  "SVC_PEERS_CACHE=${SVC_PEERS_CACHE:-$HOME/.cache/svc-peers}"
  "SVC_PEERS_TIMEOUT=${SVC_PEERS_TIMEOUT:-90}"
)
PEERS_RUN=${PEERS_ENV[0]#*=}
unset SVC_PEERS_RUN SVC_PEERS_CACHE SVC_PEERS_TIMEOUT
peers() { env "${PEERS_ENV[@]}" bash "$ROOT/scripts/peers.sh" "$@"; }
if ! command -v cargo >/dev/null && [[ -x $HOME/.cargo/bin/cargo ]]; then
  export PATH=$HOME/.cargo/bin:$PATH
fi

# ------------------------------------------------------------------------------------------------
# Stage bookkeeping: every stage's outcome is listed at the end, the failed one named loudly.

SUMMARY=()
FAILED_STAGE=
CURRENT_STAGE= # set while a stage runs: names the stage a signal interrupted
STAGE_NOTE=
PEERS_STARTED=0
T_START=$SECONDS
TOTAL_PASSED=0
TOTAL_FAILED=0
TOTAL_IGNORED=0

banner() { printf '\n==> %s\n' "$*"; }

# stage NAME CMD...: run CMD; on failure record NAME and exit with CMD's status.
# (CMD runs in an `||` context, where `set -e` is off: stage functions check their own steps.)
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  banner "[$name] $*"
  STAGE_NOTE=
  CURRENT_STAGE=$name
  "$@" || rc=$?
  CURRENT_STAGE=
  if ((rc == 0)); then
    SUMMARY+=("$(printf '%-14s ok      %4ss  %s' "$name" $((SECONDS - t0)) "$STAGE_NOTE")")
  else
    SUMMARY+=("$(printf '%-14s FAILED  %4ss  (exit %s) %s' "$name" $((SECONDS - t0)) "$rc" "$STAGE_NOTE")")
    FAILED_STAGE=$name
    exit "$rc"
  fi
}

skip() { SUMMARY+=("$(printf '%-14s skipped (%s)' "$1" "$2")"); }

on_exit() {
  local rc=$?
  if ((PEERS_STARTED)); then
    banner "[peers] stopping"
    peers stop || true
  fi
  banner "summary ($((SECONDS - T_START))s)"
  local line
  for line in "${SUMMARY[@]}"; do echo "    $line"; done
  # One plain closing line with the libtest counts of both passes.
  if ((TOTAL_PASSED + TOTAL_FAILED + TOTAL_IGNORED > 0)); then
    echo "tests: $TOTAL_PASSED passed, $TOTAL_FAILED failed, $TOTAL_IGNORED skipped"
  fi
  if ((rc != 0)); then
    if [[ -z $FAILED_STAGE && -n $CURRENT_STAGE ]]; then
      FAILED_STAGE=$CURRENT_STAGE
      echo "    $(printf '%-14s INTERRUPTED' "$CURRENT_STAGE")"
    fi
    if [[ -n $FAILED_STAGE ]]; then
      echo "scripts/test.sh: FAILED at stage '$FAILED_STAGE' (exit $rc)"
    else
      echo "scripts/test.sh: FAILED (exit $rc)"
    fi
  else
    echo "scripts/test.sh: all stages passed"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------------------------------------

start_peers() {
  PEERS_STARTED=1 # stop even a half-started set (peers.sh cleans up itself too)
  peers start || return
  # shellcheck disable=SC1091
  source "$PEERS_RUN/env" || return
  peers check
}

# cargo_test ARGS...: cargo test, its output also scanned for libtest's "test result:" lines,
# whose counts go to the stage note and the totals.
cargo_test() {
  local log rc=0 p f i passed=0 failed=0 ignored=0
  log=$(mktemp)
  cargo test "$@" 2>&1 | tee "$log" || rc=$?
  while read -r p f i; do
    passed=$((passed + p)) failed=$((failed + f)) ignored=$((ignored + i))
  done < <(sed -E 's/\x1b\[[0-9;]*m//g' "$log" |
    sed -nE 's/^test result: [A-Za-z]+\. ([0-9]+) passed; ([0-9]+) failed; ([0-9]+) ignored.*/\1 \2 \3/p')
  rm -f "$log"
  TOTAL_PASSED=$((TOTAL_PASSED + passed)) TOTAL_FAILED=$((TOTAL_FAILED + failed))
  TOTAL_IGNORED=$((TOTAL_IGNORED + ignored))
  STAGE_NOTE="$passed passed, $failed failed, $ignored ignored"
  return "$rc"
}

test_sqlite() {
  unset SVC_TEST_DATABASE # the default store: SQLite
  cargo_test --workspace "${EXTRA[@]}"
}

test_postgres() {
  export SVC_TEST_DATABASE=postgres # the harness creates a database per test server from SVC_TEST_POSTGRES_URL
  cargo_test --workspace --test it "${EXTRA[@]}"
}

stage peers start_peers

if ((QUICK)); then
  skip fmt --quick
  skip clippy --quick
else
  stage fmt cargo fmt --all -- --check
  stage clippy cargo clippy --workspace --all-targets -- -D warnings
fi

bench_smoke() {
  cargo build -q -p svc-server --bin svc || return
  bash "$ROOT/bench/run.sh" --smoke --svc-bin "${CARGO_TARGET_DIR:-$ROOT/target}/debug/svc" \
    --out "${CARGO_TARGET_DIR:-$ROOT/target}/bench/smoke"
}

# scripts/fuzz.sh; its closing count ("fuzz: N requests, 0 failures") becomes the stage note.
openapi_fuzz() {
  local log rc=0
  log=$(mktemp)
  env "${PEERS_ENV[1]}" bash "$ROOT/scripts/fuzz.sh" 2>&1 | tee "$log" || rc=$?
  STAGE_NOTE=$(sed -n 's/^fuzz: //p' "$log" | tail -n 1)
  rm -f "$log"
  return "$rc"
}

# tests/console/run.sh; node's closing counts ("ℹ pass N", "ℹ fail N") join the totals.
console_browser() {
  local log rc=0 p f
  log=$(mktemp)
  bash "$ROOT/tests/console/run.sh" 2>&1 | tee "$log" || rc=$?
  p=$(sed -E 's/\x1b\[[0-9;]*m//g' "$log" | sed -nE 's/^ℹ pass ([0-9]+)$/\1/p' | tail -n 1)
  f=$(sed -E 's/\x1b\[[0-9;]*m//g' "$log" | sed -nE 's/^ℹ fail ([0-9]+)$/\1/p' | tail -n 1)
  rm -f "$log"
  TOTAL_PASSED=$((TOTAL_PASSED + ${p:-0})) TOTAL_FAILED=$((TOTAL_FAILED + ${f:-0}))
  STAGE_NOTE="${p:-0} passed, ${f:-0} failed"
  return "$rc"
}

stage test-sqlite test_sqlite
stage test-postgres test_postgres

if ((${#EXTRA[@]})); then
  skip console "test filter given"
else
  stage console console_browser
fi

if ((QUICK)); then
  skip openapi --quick
elif ((${#EXTRA[@]})); then
  skip openapi "test filter given"
else
  stage openapi openapi_fuzz
fi

if ((QUICK)); then
  skip bench-smoke --quick
elif ((BENCH == 0)); then
  skip bench-smoke --no-bench
else
  stage bench-smoke bench_smoke
fi
