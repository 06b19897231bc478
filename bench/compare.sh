#!/usr/bin/env bash
# compare --scan against the plainest possible read of the same range.
#
# A nisshi broker with in-memory storage (the fastest it has) gets MESSAGES messages over
# PARTITIONS partitions; PostgreSQL gets a full inbox for them (every event processed) and
# the group commits the log end. Then, timed: `inboxctl compare --scan` (reads every message,
# looks every event id up in the inbox) and a minimal rdkafka consumer that only counts.
# Prints the times and the ratios. Goal: compare --scan <= 1.5x the raw read.
#
# Then compare without --scan, with every row there and with one row in MISSING_EVERY gone.
#
# Env: MESSAGES (1000000), PARTITIONS (6), RUNS (3), MISSING_EVERY (1000),
#      BENCH_PG_ADMIN (postgres://postgres@127.0.0.1:5432/test)
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
# fetching again once its queue was full), so the reads below do too. Each is timed as a
# whole process, start-up and metadata included, as compare is; RUNS of each, interleaved,
# and the median taken (the machine's other work moves single runs by 20%).
RUNS=${RUNS:-3}
export KAFKA_BENCH_PROPERTIES=fetch.queue.backoff.ms=10
timed() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
poll_runs=() batch_runs=() compare_runs=()
for run in $(seq 1 "$RUNS"); do
    echo "== run $run of $RUNS: raw read (poll), raw read (batch), inboxctl compare --scan"
    poll_runs+=("$(timed $KB count "$BROKERS" "$TOPIC")")
    batch_runs+=("$(timed $KB count-batch "$BROKERS" "$TOPIC")")
    compare_runs+=("$(timed env DATABASE_URL="$PG_URL" KAFKA_BROKERS="$BROKERS" $INBOXCTL compare \
        --group "$GROUP" --topic "$TOPIC" --scan --format json ${COMPARE_FLAGS:-})")
done
DATABASE_URL=$PG_URL KAFKA_BROKERS=$BROKERS $INBOXCTL compare --group "$GROUP" --topic "$TOPIC" --scan \
    --format json ${COMPARE_FLAGS:-} > "$work/compare.json"
python3 - "$work/compare.json" "$raw_count" "$raw_secs" "${poll_runs[*]}" "${batch_runs[*]}" "${compare_runs[*]}" <<'PY'
import json, statistics, sys
report = json.load(open(sys.argv[1]))
raw_count, raw_secs = int(sys.argv[2]), float(sys.argv[3])
runs = {name: [float(x) for x in arg.split()] for name, arg in
        (("poll", sys.argv[4]), ("batch", sys.argv[5]), ("compare", sys.argv[6]))}
median = {name: statistics.median(values) for name, values in runs.items()}
print(f"scanned {report['messages_scanned']} messages "
      f"(lost {report['lost_total']}, pending {report['pending_total']}, duplicates {len(report['duplicates'])})")
print()
def line(label, secs, values=None):
    every = "  (" + ", ".join(f"{v:.2f}" for v in values) + ")" if values else ""
    print(f"{label:34} {secs:6.2f} s {raw_count / secs:10.0f} msg/s{every}")
line("raw read, librdkafka's defaults", raw_secs)
line("raw read, poll (median)", median["poll"], runs["poll"])
line("raw read, batch call (median)", median["batch"], runs["batch"])
line("compare --scan (median)", median["compare"], runs["compare"])
for name, base in (("poll", median["poll"]), ("batch call", median["batch"])):
    ratio = median["compare"] / base
    print(f"ratio to raw read, {name:10} {ratio:6.2f} x  (goal <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")
PY

# Without --scan, compare reads only the offsets that have no inbox row. With every row
# there it reads nothing; with one row in MISSING_EVERY gone (spread over the whole log, so
# the spans merge and it reads nearly everything) it reads and decides them.
MISSING_EVERY=${MISSING_EVERY:-1000}
# Exit code 3 (lost) is the expected outcome once rows are gone.
compare_by_offset() {
    DATABASE_URL=$PG_URL KAFKA_BROKERS=$BROKERS $INBOXCTL compare --group "$GROUP" \
        --topic "$TOPIC" --format json || [ $? -eq 3 ]
}
by_offset() { timed compare_by_offset; }
echo
echo "== compare without --scan, every row there"
full_runs=()
for _ in $(seq 1 "$RUNS"); do full_runs+=("$(by_offset)"); done
psql "$PG_URL" -qc "DELETE FROM processed_messages WHERE substr(event_id, 5)::bigint % $MISSING_EVERY = 0" \
    -c "VACUUM ANALYZE processed_messages"
echo "== compare without --scan, one row in $MISSING_EVERY deleted"
gap_runs=()
for _ in $(seq 1 "$RUNS"); do gap_runs+=("$(by_offset)"); done
compare_by_offset > "$work/by-offset.json"
python3 - "$work/by-offset.json" "${full_runs[*]}" "${gap_runs[*]}" <<'PY'
import json, statistics, sys
report = json.load(open(sys.argv[1]))
full = [float(x) for x in sys.argv[2].split()]
gaps = [float(x) for x in sys.argv[3].split()]
def runs(values):
    return "(" + ", ".join(f"{v:.2f}" for v in values) + ")"
print(f"every row there:        {statistics.median(full):6.2f} s (median) {runs(full)}")
print(f"offsets without a row:  {statistics.median(gaps):6.2f} s (median) {runs(gaps)}; "
      f"lost {report['lost_total']}, named by id "
      f"{sum(1 for p in report['partitions'] for l in p['lost'] if l['event_id'])}")
PY
