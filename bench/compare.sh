#!/usr/bin/env bash
# compare --scan against the plainest possible read of the same range.
#
# A nisshi broker with in-memory storage (the fastest it has) gets MESSAGES messages over
# PARTITIONS partitions; PostgreSQL gets a full inbox for them (every event processed) and
# the group commits the log end. Then, timed: `inboxctl compare --scan` (reads every message,
# looks every event id up in the inbox) and a minimal rdkafka consumer that only counts.
# Prints both times and the ratio. Goal: compare --scan <= 1.5x the raw read.
#
# Env: MESSAGES (1000000), PARTITIONS (6), BENCH_PG_ADMIN (postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail
cd "$(dirname "$0")/.."

MESSAGES=${MESSAGES:-1000000}
PARTITIONS=${PARTITIONS:-6}
PG_ADMIN=${BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
DB=inboxctl_bench_compare
PG_URL="${PG_ADMIN%/*}/$DB"
TOPIC=bench-orders
GROUP=bench-billing

bench_cleanup() {
    psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
}
# shellcheck source=bench/broker.sh
source bench/broker.sh

echo "== producing $MESSAGES messages over $PARTITIONS partitions (nisshi, memory storage)"
$KB produce "$BROKERS" "$TOPIC" "$PARTITIONS" "$MESSAGES"
$KB commit-end "$BROKERS" "$TOPIC" "$GROUP" >/dev/null

echo "== a full inbox in PostgreSQL"
psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
DATABASE_URL=$PG_URL $INBOXCTL migrate run >/dev/null
psql "$PG_URL" -qc "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\")
    SELECT '$GROUP', 'evt-' || n, '$TOPIC', n % $PARTITIONS, n / $PARTITIONS
    FROM generate_series(0, $MESSAGES - 1) AS n" -c "VACUUM ANALYZE processed_messages"

echo "== raw read (rdkafka consumer that only counts), librdkafka's defaults"
read -r raw_count raw_secs < <($KB count "$BROKERS" "$TOPIC")
echo "read $raw_count messages in ${raw_secs}s"
# inboxctl's reader sets fetch.queue.backoff.ms=10 (librdkafka waits 1 s by default before
# fetching again once its queue was full); the same read with that setting:
echo "== raw read, fetch.queue.backoff.ms=10 as inboxctl's reader"
# The helper times its read loop only (from assigning the partitions); the process's wall
# clock, start-up and metadata included, is measured the way compare's is.
process_start=$(date +%s.%N)
read -r _ tuned_secs < <(KAFKA_BENCH_PROPERTIES=fetch.queue.backoff.ms=10 $KB count "$BROKERS" "$TOPIC")
process_end=$(date +%s.%N)
echo "read $raw_count messages in ${tuned_secs}s"

echo "== inboxctl compare --scan"
start=$(date +%s.%N)
DATABASE_URL=$PG_URL KAFKA_BROKERS=$BROKERS $INBOXCTL compare --group "$GROUP" --topic "$TOPIC" --scan \
    --format json ${COMPARE_FLAGS:-} > "$work/compare.json"
end=$(date +%s.%N)
python3 - "$work/compare.json" "$raw_count" "$raw_secs" "$start" "$end" "$tuned_secs" "$process_start" "$process_end" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
raw_count, raw_secs = int(sys.argv[2]), float(sys.argv[3])
secs = float(sys.argv[5]) - float(sys.argv[4])
tuned_secs = float(sys.argv[6])
process_secs = float(sys.argv[8]) - float(sys.argv[7])
print(f"scanned {report['messages_scanned']} messages in {secs:.2f}s "
      f"(lost {report['lost_total']}, pending {report['pending_total']}, duplicates {len(report['duplicates'])})")
print()
print(f"raw read, defaults          {raw_secs:8.2f} s  {raw_count / raw_secs:10.0f} msg/s")
print(f"raw read, backoff 10 ms     {tuned_secs:8.2f} s  {raw_count / tuned_secs:10.0f} msg/s  (read loop)")
print(f"  the same, whole process     {process_secs:8.2f} s  {raw_count / process_secs:10.0f} msg/s")
print(f"compare --scan (whole run)  {secs:8.2f} s  {report['messages_scanned'] / secs:10.0f} msg/s")
for name, base in (("defaults", raw_secs), ("backoff 10 ms", tuned_secs), ("whole process", process_secs)):
    ratio = secs / base
    print(f"ratio to raw read, {name:13} {ratio:6.2f} x  (goal <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")
PY
