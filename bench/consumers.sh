#!/usr/bin/env bash
# Benchmark: inboxctl on an inbox of many consumers.
#
# CONSUMERS consumers of ROWS_EACH rows each, half of each consumer's rows older than the
# cutoff (40 days old), half new. Times, with the peak memory (/usr/bin/time's maximum
# resident set), `prune --dry-run`, `inspect` as a table and as JSON, and a `prune --yes`
# that deletes the old half, on a fresh copy of the table each time. Timings are reported,
# never asserted; the script fails only when a command fails or deletes the wrong number of
# rows.
#
# Environment:
#   BACKEND        postgres (default), mysql or sqlite
#   BENCH_PG_ADMIN / BENCH_MYSQL_ADMIN
#                  admin URLs on servers that may CREATE DATABASE (defaults: the local
#                  postgres://postgres@127.0.0.1:5432/test and mysql://root@127.0.0.1:3306/test)
#   CONSUMERS      how many consumers (default 100000)
#   ROWS_EACH      rows per consumer, even (default 10)
#   INBOXCTL       the binary (default target/release/inboxctl, built when missing)
set -euo pipefail
cd "$(dirname "$0")/.."

BACKEND=${BACKEND:-postgres}
BENCH_PG_ADMIN=${BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
BENCH_MYSQL_ADMIN=${BENCH_MYSQL_ADMIN:-mysql://root@127.0.0.1:3306/test}
CONSUMERS=${CONSUMERS:-100000}
ROWS_EACH=${ROWS_EACH:-10}
INBOXCTL=${INBOXCTL:-target/release/inboxctl}
if [ ! -x "$INBOXCTL" ]; then
    cargo build --release --locked
fi
if [ $((ROWS_EACH % 2)) -ne 0 ]; then
    echo "ROWS_EACH must be even" >&2
    exit 2
fi
ROWS=$((CONSUMERS * ROWS_EACH))
OLD=$((ROWS / 2))
DB=inboxctl_bench_consumers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The rows, as SQL the backend runs: consumer c000001 ..., event ids e1 ..., the first half
# of each consumer's rows 40 days old.
seed_sql() {
    local now=$1 series=$2
    cat <<SQL
INSERT INTO processed_messages (consumer, event_id, topic, "partition", "offset", processed_at)
SELECT 'c' || lpad(CAST((n / $ROWS_EACH) AS text), 6, '0'), 'e' || n, 't', 0, n,
       CASE WHEN n % $ROWS_EACH < $ROWS_EACH / 2 THEN $now - interval '40 days' ELSE $now END
FROM $series
SQL
}

case "$BACKEND" in
postgres)
    base=${BENCH_PG_ADMIN%/*}
    URL="$base/$DB"
    admin() { psql -qAt "$BENCH_PG_ADMIN" -c "$1"; }
    fresh() {
        admin "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
        admin "CREATE DATABASE $DB" >/dev/null
        "$INBOXCTL" migrate run --database-url "$URL" -q >/dev/null
        psql -qAt "$URL" -c "$(seed_sql 'now()' "generate_series(0, $ROWS - 1) AS n")" >/dev/null
        psql -qAt "$URL" -c "VACUUM ANALYZE processed_messages" >/dev/null
    }
    drop() { admin "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1; }
    ;;
mysql)
    base=${BENCH_MYSQL_ADMIN%/*}
    URL="$base/$DB"
    hostport=${base#mysql://}
    user=${hostport%@*}
    hostport=${hostport#*@}
    mysql_cli() { mysql -u "$user" -h "${hostport%:*}" -P "${hostport#*:}" "$@"; }
    fresh() {
        mysql_cli -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB"
        "$INBOXCTL" migrate run --database-url "$URL" -q >/dev/null
        # Numbers 0 to ROWS - 1 from seven joined digits (up to 10,000,000 rows), which
        # needs neither MariaDB's sequence tables nor MySQL's recursion limit.
        local digit="(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3
            UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7
            UNION ALL SELECT 8 UNION ALL SELECT 9)"
        mysql_cli "$DB" -e "
            INSERT INTO processed_messages (consumer, event_id, topic, \`partition\`, \`offset\`, processed_at)
            SELECT CONCAT('c', LPAD(n DIV $ROWS_EACH, 6, '0')), CONCAT('e', n), 't', 0, n,
                   CASE WHEN n MOD $ROWS_EACH < $ROWS_EACH / 2
                        THEN UTC_TIMESTAMP(6) - INTERVAL 40 DAY ELSE UTC_TIMESTAMP(6) END
            FROM (SELECT d1.d + 10 * d2.d + 100 * d3.d + 1000 * d4.d + 10000 * d5.d
                         + 100000 * d6.d + 1000000 * d7.d AS n
                  FROM $digit d1, $digit d2, $digit d3, $digit d4, $digit d5, $digit d6,
                       $digit d7) AS numbers
            WHERE n < $ROWS;
            ANALYZE TABLE processed_messages;" >/dev/null
    }
    drop() { mysql_cli -e "DROP DATABASE IF EXISTS $DB"; }
    ;;
sqlite)
    URL="sqlite://$work/inbox.db"
    fresh() {
        rm -f "$work"/inbox.db*
        "$INBOXCTL" migrate run --database-url "$URL" -q >/dev/null
        python3 - "$work/inbox.db" "$ROWS" "$ROWS_EACH" <<'PY'
import sqlite3, sys, datetime
path, rows, each = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
now = datetime.datetime.now(datetime.timezone.utc)
fmt = lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
old, new = fmt(now - datetime.timedelta(days=40)), fmt(now)
db = sqlite3.connect(path)
db.executemany(
    'INSERT INTO processed_messages (consumer, event_id, topic, "partition", "offset", processed_at) '
    "VALUES (?, ?, 't', 0, ?, ?)",
    ((f"c{n // each:06d}", f"e{n}", n, old if n % each < each // 2 else new) for n in range(rows)),
)
db.commit()
db.execute("ANALYZE")
db.close()
PY
    }
    drop() { rm -f "$work"/inbox.db*; }
    ;;
*)
    echo "BACKEND must be postgres, mysql or sqlite" >&2
    exit 2
    ;;
esac
trap 'drop; rm -rf "$work"' EXIT

# Runs one inboxctl command under /usr/bin/time; prints its label, seconds and peak memory.
measure() {
    local label=$1
    shift
    if ! /usr/bin/time -f '%e %M' -o "$work/time" "$INBOXCTL" "$@" --database-url "$URL" \
        >"$work/stdout" 2>"$work/stderr"; then
        echo "$label failed:" >&2
        cat "$work/stderr" >&2
        exit 1
    fi
    read -r seconds kib <"$work/time"
    printf '%-22s %8.2f s %8.1f MB\n' "$label" "$seconds" "$(echo "$kib / 1024" | bc -l)"
}

echo "$BACKEND: $CONSUMERS consumers of $ROWS_EACH rows ($ROWS rows, $OLD older than 30 days)"
echo "inboxctl: $INBOXCTL ($("$INBOXCTL" --version))"
fresh
measure "prune --dry-run" prune --older-than 30d --dry-run --format json
matched=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows_matched"])' "$work/stdout")
[ "$matched" = "$OLD" ] || { echo "dry run counted $matched rows, not $OLD" >&2; exit 1; }
measure "inspect (table)" inspect
measure "inspect --format json" inspect --format json
measure "prune --yes" prune --older-than 30d --yes --format json
deleted=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows_deleted"])' "$work/stdout")
[ "$deleted" = "$OLD" ] || { echo "prune deleted $deleted rows, not $OLD" >&2; exit 1; }
measure "prune --yes (nothing)" prune --older-than 30d --yes --format json
