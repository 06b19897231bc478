#!/usr/bin/env bash
# prune --group (the redelivery guard) against prune --consumer on the same rows: one
# consumer's ROWS rows (default 100,000) spread over the partitions of one topic, half of
# them older than the cutoff, every one below its partition's committed offset, so both
# delete the same rows. For each backend in BACKENDS and each count in PARTITIONS, it prints
# both times (the whole command, Kafka's lookups included) and their ratio.
#
#   bench/prune-guard.sh
#   PARTITIONS="500 5000" ROWS=40000 BACKENDS=postgres bench/prune-guard.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-100000}
PARTITIONS=${PARTITIONS:-"500 5000"}
BACKENDS=${BACKENDS:-"sqlite postgres mysql"}
PG_ADMIN=${BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
MY_ADMIN=${BENCH_MY_ADMIN:-mysql://root@127.0.0.1:3306/test}
# shellcheck source=bench/broker.sh
source bench/broker.sh
database=inboxctl_bench_guard
bench_cleanup() {
    psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $database" 2>/dev/null || true
    mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $database" 2>/dev/null || true
}

# A fresh inbox of ROWS rows of consumer `g`, one a second from 2026-01-01, at offset 0 of
# partition n % PARTS; prints its URL.
fill() {
    local backend=$1 parts=$2 topic=$3
    case $backend in
    sqlite)
        rm -f "$work/inbox.db"*
        url=sqlite://$work/inbox.db
        "$INBOXCTL" -q migrate run --database-url "$url" >/dev/null
        sqlite3 "$work/inbox.db" "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $ROWS)
            INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\", processed_at)
            SELECT 'g', 'e' || i, '$topic', i % $parts, 0,
                   strftime('%Y-%m-%d %H:%M:%f', '2026-01-01 00:00:00', '+' || i || ' seconds') FROM s;
            ANALYZE;"
        ;;
    postgres)
        psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $database" -c "CREATE DATABASE $database" 2>/dev/null
        url=${PG_ADMIN%/*}/$database
        "$INBOXCTL" -q migrate run --database-url "$url" >/dev/null
        psql -q "$url" -c "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\", processed_at)
            SELECT 'g', 'e' || i, '$topic', i % $parts, 0, TIMESTAMP '2026-01-01' + i * INTERVAL '1 second'
            FROM generate_series(1, $ROWS) i" -c "VACUUM ANALYZE processed_messages"
        ;;
    mysql)
        mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS $database; CREATE DATABASE $database"
        url=${MY_ADMIN%/*}/$database
        "$INBOXCTL" -q migrate run --database-url "$url" >/dev/null
        mysql -uroot -h127.0.0.1 "$database" -e "INSERT INTO processed_messages (consumer, event_id, topic, \`partition\`, \`offset\`, processed_at)
            SELECT 'g', CONCAT('e', seq), '$topic', seq % $parts, 0, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL seq SECOND
            FROM seq_1_to_$ROWS; ANALYZE TABLE processed_messages" >/dev/null
        ;;
    esac
}

cutoff=$(date -u -d "2026-01-01 00:00:00 UTC + $((ROWS / 2)) seconds" '+%Y-%m-%dT%H:%M:%SZ')
printf '%-9s %10s %8s %12s %12s %7s\n' backend partitions rows consumer_s group_s ratio
for parts in $PARTITIONS; do
    topic=guard-$parts
    "$KB" produce "$BROKERS" "$topic" "$parts" $((parts * 2)) >/dev/null
    "$KB" commit-end "$BROKERS" "$topic" g >/dev/null
    for backend in $BACKENDS; do
        declare -A took=()
        for how in consumer group; do
            fill "$backend" "$parts" "$topic"
            args=(--consumer g)
            [ "$how" = group ] && args=(--group g --brokers "$BROKERS")
            start=$(date +%s.%N)
            deleted=$("$INBOXCTL" prune "${args[@]}" --before "$cutoff" --yes --format json \
                --database-url "$url" | python3 -c 'import json, sys; print(json.load(sys.stdin)["rows_deleted"])')
            took[$how]=$(echo "$(date +%s.%N) - $start" | bc)
            if [ "$deleted" != $((ROWS / 2 - 1)) ] && [ "$deleted" != $((ROWS / 2)) ]; then
                echo "prune --$how deleted $deleted rows, not half of $ROWS" >&2
                exit 1
            fi
        done
        printf '%-9s %10s %8s %12.2f %12.2f %6.1fx\n' "$backend" "$parts" "$ROWS" \
            "${took[consumer]}" "${took[group]}" "$(echo "${took[group]} / ${took[consumer]}" | bc -l)"
    done
done
