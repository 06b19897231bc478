#!/usr/bin/env bash
# replay throughput and memory.
#
# A nisshi broker with in-memory storage gets MESSAGES messages ({"event_id","account","amount"})
# over PARTITIONS partitions; PostgreSQL gets accounts(id, balance). Measured:
#   - replay with the SQL handler `UPDATE accounts SET balance = balance + :amount WHERE id =
#     :account`, default batch size, over the whole range (msg/s, peak RSS by /usr/bin/time -v);
#   - the same with --batch-size 1 (one transaction per message) over the first PER_MESSAGE
#     messages, since a million single transactions take minutes;
#   - the raw read of the range (a minimal rdkafka consumer that only counts);
#   - a raw INSERT … SELECT of MESSAGES inbox rows;
#   - the server alone doing replay's writes (inbox rows and the handler's UPDATE, 500 per
#     transaction) in a procedure: what no client can beat;
#   - replay with an exec handler, a Python program that parses each message and answers ok,
#     over the first EXEC_MESSAGES messages (msg/s, peak RSS).
# Goals: default >= 20x per-message; >= 50% of the slower of raw read and raw write; RSS <= 64 MiB.
#
# Env: MESSAGES (1000000), PARTITIONS (6), PER_MESSAGE (20000), EXEC_MESSAGES (100000),
#      BATCH (inboxctl's default),
#      BENCH_PG_ADMIN (postgres://postgres@127.0.0.1:5432/test)
set -euo pipefail
cd "$(dirname "$0")/.."

MESSAGES=${MESSAGES:-1000000}
PARTITIONS=${PARTITIONS:-6}
PER_MESSAGE=${PER_MESSAGE:-20000}
EXEC_MESSAGES=${EXEC_MESSAGES:-100000}
PG_ADMIN=${BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
DB=inboxctl_bench_replay
PG_URL="${PG_ADMIN%/*}/$DB"
TOPIC=bench-payments
BATCH_FLAG=()
[ -n "${BATCH:-}" ] && BATCH_FLAG=(--batch-size "$BATCH")

bench_cleanup() {
    psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
}
# shellcheck source=bench/broker.sh
source bench/broker.sh

echo "== producing $MESSAGES messages over $PARTITIONS partitions"
$KB produce "$BROKERS" "$TOPIC" "$PARTITIONS" "$MESSAGES"

echo "== PostgreSQL: inbox and accounts"
psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null 2>&1
DATABASE_URL=$PG_URL $INBOXCTL migrate run >/dev/null
psql "$PG_URL" -qc "CREATE TABLE accounts (id integer PRIMARY KEY, balance bigint NOT NULL DEFAULT 0)" \
    -c "INSERT INTO accounts (id) SELECT g FROM generate_series(0, 999) AS g"
echo 'UPDATE accounts SET balance = balance + :amount WHERE id = :account' > "$work/handler.sql"

echo "== raw read"
read -r raw_count raw_secs < <($KB count "$BROKERS" "$TOPIC")

echo "== raw INSERT … SELECT of $MESSAGES inbox rows"
start=$(date +%s.%N)
psql "$PG_URL" -qc "INSERT INTO processed_messages (consumer, event_id, topic, \"partition\", \"offset\")
    SELECT 'raw-insert', 'evt-' || n, '$TOPIC', n % $PARTITIONS, n / $PARTITIONS FROM generate_series(0, $MESSAGES - 1) AS n"
end=$(date +%s.%N)
raw_write_secs=$(python3 -c "print($end - $start)")
# Replay starts from an empty inbox, as the raw write did: TRUNCATE, not DELETE (which would
# leave the table and its indexes at full size, a slower start for replay).
psql "$PG_URL" -qc "TRUNCATE processed_messages" -c "VACUUM ANALYZE processed_messages"

# What the server alone needs for replay's writes: a procedure inserts the inbox rows and
# runs the handler's UPDATE (on a copy of accounts) for every message, 500 per transaction,
# with no client, no Kafka and no protocol in between. A bound for any client.
echo "== server alone: inbox rows and the handler's UPDATE, $MESSAGES messages, 500 per transaction"
psql "$PG_URL" -q <<SQL
CREATE TABLE accounts_server_alone (LIKE accounts INCLUDING ALL);
INSERT INTO accounts_server_alone SELECT * FROM accounts;
CREATE FUNCTION server_alone_handler(amount bigint, account integer) RETURNS void LANGUAGE sql
    AS 'UPDATE accounts_server_alone SET balance = balance + amount WHERE id = account';
CREATE PROCEDURE server_alone(messages integer, per_transaction integer) LANGUAGE plpgsql AS \$\$
BEGIN
    FOR b IN 0 .. (messages - 1) / per_transaction LOOP
        INSERT INTO processed_messages (consumer, event_id, topic, "partition", "offset")
            SELECT 'server-alone', 'evt-' || n, '$TOPIC', n % $PARTITIONS, n / $PARTITIONS
            FROM generate_series(b * per_transaction, LEAST(messages, (b + 1) * per_transaction) - 1) AS n;
        PERFORM server_alone_handler(1, n % 1000)
            FROM generate_series(b * per_transaction, LEAST(messages, (b + 1) * per_transaction) - 1) AS n;
        COMMIT;
    END LOOP;
END \$\$;
SQL
start=$(date +%s.%N)
psql "$PG_URL" -qc "CALL server_alone($MESSAGES, 500)"
end=$(date +%s.%N)
server_alone_secs=$(python3 -c "print($end - $start)")
psql "$PG_URL" -qc "TRUNCATE processed_messages" -c "DROP TABLE accounts_server_alone" \
    -c "VACUUM ANALYZE processed_messages"

replay() {  # consumer, json out, time out, extra args…
    local consumer=$1 json=$2 timing=$3
    shift 3
    DATABASE_URL=$PG_URL KAFKA_BROKERS=$BROKERS /usr/bin/time -v -o "$timing" \
        $INBOXCTL replay --topic "$TOPIC" --from earliest --consumer "$consumer" \
        --format json "$@" > "$json"
}

echo "== replay, --batch-size 1, first $PER_MESSAGE messages"
per_partition=$(( (PER_MESSAGE + PARTITIONS - 1) / PARTITIONS ))
replay bench-per-message "$work/one.json" "$work/one.time" --sql "$work/handler.sql" \
    --batch-size 1 --to "$per_partition"

echo "== replay, ${BATCH:-default} batch size, all $MESSAGES messages"
replay bench-batched "$work/batched.json" "$work/batched.time" --sql "$work/handler.sql" \
    "${BATCH_FLAG[@]}"

echo "== replay, exec handler, first $EXEC_MESSAGES messages"
cat > "$work/answer_ok.py" <<'PY'
import json, sys
for line in sys.stdin:
    json.loads(line)
    sys.stdout.write('{"ok":true}\n')
    sys.stdout.flush()
PY
per_partition=$(( (EXEC_MESSAGES + PARTITIONS - 1) / PARTITIONS ))
replay bench-exec "$work/exec.json" "$work/exec.time" --exec "python3 $work/answer_ok.py" \
    "${BATCH_FLAG[@]}" --to "$per_partition"

total=$(psql "$PG_URL" -tAc "SELECT sum(balance) FROM accounts")
python3 - "$work" "$raw_count" "$raw_secs" "$raw_write_secs" "$MESSAGES" "$total" "$server_alone_secs" <<'PY'
import json, re, sys
work, raw_count, raw_secs, raw_write_secs, messages, total = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
server_alone_rate = messages / float(sys.argv[7])
one = json.load(open(f"{work}/one.json"))
batched = json.load(open(f"{work}/batched.json"))
exec_run = json.load(open(f"{work}/exec.json"))
def rss(path):
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read()).group(1)) / 1024
one_rate = one["messages_per_second"]
rate = batched["messages_per_second"]
read_rate = raw_count / raw_secs
write_rate = messages / raw_write_secs
slower = min(read_rate, write_rate)
print()
print(f"processed: per-message run {one['processed']}, batched run {batched['processed']}; sum of balances {total} (expected {one['processed'] + batched['processed']})")
print(f"replay --batch-size 1   {one_rate:10.0f} msg/s   peak RSS {rss(work + '/one.time'):6.1f} MiB")
print(f"replay (batched)        {rate:10.0f} msg/s   peak RSS {rss(work + '/batched.time'):6.1f} MiB")
print(f"replay --exec (python)  {exec_run['messages_per_second']:10.0f} msg/s   peak RSS {rss(work + '/exec.time'):6.1f} MiB   ({exec_run['processed']} processed)")
print(f"raw read                {read_rate:10.0f} msg/s")
print(f"raw INSERT ... SELECT   {write_rate:10.0f} rows/s")
print(f"server alone            {server_alone_rate:10.0f} msg/s   ({server_alone_rate / write_rate * 100:.1f}% of the raw write; replay is {rate / server_alone_rate * 100:.1f}% of it)")
print(f"batched / per-message   {rate / one_rate:10.1f} x   (goal >= 20x: {'met' if rate / one_rate >= 20 else 'NOT met'})")
print(f"batched / slower raw    {rate / slower * 100:10.1f} %   (goal >= 50%: {'met' if rate / slower >= 0.5 else 'NOT met'})")
print(f"peak RSS                {rss(work + '/batched.time'):10.1f} MiB (goal <= 64 MiB: {'met' if rss(work + '/batched.time') <= 64 else 'NOT met'})")
PY
