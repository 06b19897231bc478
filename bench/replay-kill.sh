#!/usr/bin/env bash
# The long kill run for replay: SIGKILL at random moments, re-run until it completes, then
# check that every effect happened exactly once.
#
# MESSAGES messages ({"account": n % 1000, "amount": 1}) go to a nisshi broker; replay with
# the SQL handler `UPDATE accounts SET balance = balance + :amount WHERE id = :account` is
# started again and again and killed after a random 0.05–1.5 s, at least KILLS times, then
# allowed to finish. Afterwards: sum(balance) must be MESSAGES and the inbox must hold each
# event once. Exit 0 when it holds, 1 when not.
#
# Env: MESSAGES (200000), KILLS (50), BATCH (200), DATABASE (postgres|sqlite|mysql, postgres)
set -euo pipefail
cd "$(dirname "$0")/.."

MESSAGES=${MESSAGES:-200000}
KILLS=${KILLS:-50}
BATCH=${BATCH:-200}
DATABASE=${DATABASE:-postgres}
TOPIC=kill-payments

# shellcheck source=bench/broker.sh
source bench/broker.sh
case $DATABASE in
    postgres) URL=postgres://postgres@127.0.0.1:5432/inboxctl_kill
        psql postgres://postgres@127.0.0.1:5432/test -qc "DROP DATABASE IF EXISTS inboxctl_kill WITH (FORCE)" -c "CREATE DATABASE inboxctl_kill" >/dev/null 2>&1
        sql() { psql "$URL" -tAqc "$1"; } ;;
    mysql) URL=mysql://root@127.0.0.1:3306/inboxctl_kill
        mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS inboxctl_kill; CREATE DATABASE inboxctl_kill"
        sql() { mysql -uroot -h127.0.0.1 -N inboxctl_kill -e "$1"; } ;;
    sqlite) URL=sqlite://$work/inbox.db
        sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchall(); c.commit(); print("\n".join(str(x[0]) for x in r))' "$work/inbox.db" "$1"; } ;;
    *) echo "DATABASE must be postgres, mysql or sqlite" >&2; exit 2 ;;
esac
bench_cleanup() {
    case $DATABASE in
        postgres) psql postgres://postgres@127.0.0.1:5432/test -qc "DROP DATABASE IF EXISTS inboxctl_kill WITH (FORCE)" >/dev/null 2>&1 || true ;;
        mysql) mysql -uroot -h127.0.0.1 -e "DROP DATABASE IF EXISTS inboxctl_kill" || true ;;
    esac
}

$KB produce "$BROKERS" "$TOPIC" 4 "$MESSAGES"
DATABASE_URL=$URL $INBOXCTL migrate run >/dev/null
sql "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0)" >/dev/null
python3 -c "print('INSERT INTO accounts (id) VALUES ' + ','.join('(%d)' % i for i in range(1000)))" > "$work/accounts.sql"
sql "$(cat "$work/accounts.sql")" >/dev/null
echo 'UPDATE accounts SET balance = balance + :amount WHERE id = :account' > "$work/handler.sql"

# exec: `run &` is a subshell, and the kill below must reach inboxctl itself, not leave it
# running on beside the next run.
run() {
    DATABASE_URL=$URL KAFKA_BROKERS=$BROKERS exec $INBOXCTL replay --topic "$TOPIC" --from earliest \
        --consumer kill-test --sql "$work/handler.sql" --batch-size "$BATCH" -q --format json \
        >"$work/last.json" 2>>"$work/replay.err"
}

kills=0 runs=0
started=$(date +%s)
while :; do
    runs=$((runs + 1))
    run &
    pid=$!
    if [ "$kills" -lt "$KILLS" ]; then
        sleep "$(python3 -c 'import random; print(round(random.uniform(0.05, 1.5), 3))')"
        if kill -KILL "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null || true
            kills=$((kills + 1))
            continue
        fi
    fi
    if wait "$pid"; then break; fi
    echo "replay failed (not killed):" >&2; tail -5 "$work/replay.err" >&2; exit 1
done
sum=$(sql "SELECT SUM(balance) FROM accounts")
rows=$(sql "SELECT COUNT(*) FROM processed_messages WHERE consumer = 'kill-test'")
echo "database $DATABASE: $MESSAGES messages, $kills kills (SIGKILL), $runs runs, $(( $(date +%s) - started ))s"
echo "sum(balance) = $sum (expected $MESSAGES); inbox rows = $rows (expected $MESSAGES)"
if [ "$sum" = "$MESSAGES" ] && [ "$rows" = "$MESSAGES" ]; then
    echo "OK: every effect exactly once"
else
    echo "FAILED: double or missing effects"
    exit 1
fi
