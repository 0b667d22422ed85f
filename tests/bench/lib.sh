# Shared by the load scripts in tests/bench: builds the release `trellis`, starts it on PORT with
# a temporary data dir (and a fresh PostgreSQL database when BENCH_DATABASE_URL is set), and
# removes everything on exit. Source it after setting PORT and TOKEN; it defines
#   work       the temporary directory (the data dir; also for scratch files)
#   engine     SQLite or PostgreSQL
#   BASE       http://127.0.0.1:$PORT/api/v4
#   server_pid the server's process id
#   run_sql    runs SQL (argument or stdin) on the server's database
#   api        method path [json]: an API call as the root token
#   json_id    reads a JSON object on stdin and prints its "id"
set -euo pipefail
source tests/bench/tools.sh

BASE="http://127.0.0.1:$PORT/api/v4"

# TRELLIS_BIN runs another binary (a debug build, to try a script); figures are release-only.
bin="${TRELLIS_BIN:-${CARGO_TARGET_DIR:-target}/release/trellis}"
[ -n "${TRELLIS_BIN:-}" ] || cargo build --release -q -p trellis

work="$(mktemp -d)"
server_pid=""
bench_cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ -n "${bench_db:-}" ]; then psql "$BENCH_DATABASE_URL" -qc "DROP DATABASE IF EXISTS $bench_db WITH (FORCE)" || true; fi
    rm -rf "$work"
}
trap bench_cleanup EXIT

database_env=()
engine="SQLite"
if [ -n "${BENCH_DATABASE_URL:-}" ]; then
    bench_db="trellis_bench_$$"
    psql "$BENCH_DATABASE_URL" -qc "CREATE DATABASE $bench_db"
    database_url="${BENCH_DATABASE_URL%/*}/$bench_db"
    database_env=(TRELLIS_DATABASE_URL="$database_url")
    engine="PostgreSQL"
    run_sql() { psql "$database_url" -v ON_ERROR_STOP=1 -qAt ${1:+-c "$1"}; }
else
    need sqlite3 sqlite3
    run_sql() { sqlite3 -bail "$work/trellis.db" ${1:+"$1"}; }
fi

env "${database_env[@]}" TRELLIS_DATA_DIR="$work" TRELLIS_LISTEN="127.0.0.1:$PORT" \
    TRELLIS_INITIAL_ROOT_TOKEN="$TOKEN" TRELLIS_LOG="${BENCH_TRELLIS_LOG:-warn}" "$bin" serve &
server_pid=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$PORT/-/health" >/dev/null && break; sleep 0.1; done

api() { # method path [json]
    curl -fsS -X "$1" -H "PRIVATE-TOKEN: $TOKEN" -H "Content-Type: application/json" \
        ${3:+--data "$3"} "$BASE$2"
}
json_id() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
