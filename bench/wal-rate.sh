#!/usr/bin/env bash
# How much WAL can a concurrent writer produce before a single-row inserter's p99 passes
# 2x its idle p99? The question behind bench/prune.sh's latency goal, without prune.
#
# The same inserter as bench/prune.sh (one pgbench client, one autocommit INSERT into
# processed_messages per transaction) runs for STEP_SECONDS at each of RATES. Beside it, a
# second pgbench client writes WAL and nothing else at that rate: non-transactional
# logical messages of MESSAGE_KB each (pg_logical_emit_message), paced by pgbench -R, so
# that no commit of the writer waits for a flush, as none of prune's does. Rate 0 is the
# inserter alone. Each rate starts after a CHECKPOINT. Prints, per rate, the WAL the server
# wrote and how fast (pg_stat_wal), and the inserter's inserts, p50, p99 and the p99's
# ratio to the p99 at the first of RATES (0 by default: the inserter alone).
#
# What it leaves out, so read its figures as a lower bound on what deleting costs the
# inserter: the writer reads no table, dirties no page, and uses little CPU.
#
# Environment:
#   BENCH_PG_ADMIN  admin URL on a server that may CREATE DATABASE
#                   (default postgres://postgres@127.0.0.1:5432/test)
#   RATES           WAL rates to try, MB/s (default "0 25 50 100 150 200 0")
#   STEP_SECONDS    seconds at each rate (default 10)
#   MESSAGE_KB      size of one logical message (default 64)
#   COMMITS=1       make each message transactional and commit it asynchronously
#                   (synchronous_commit = off), as prune commits each batch: each commit
#                   then wakes the WAL writer
#   INBOXCTL        the binary that creates the table (default target/release/inboxctl)
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_PG_ADMIN=${BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
RATES=${RATES:-0 25 50 100 150 200 0}
SECONDS_PER_RATE=${STEP_SECONDS:-10}
MESSAGE_KB=${MESSAGE_KB:-64}
COMMITS=${COMMITS:-0}
INBOXCTL=${INBOXCTL:-target/release/inboxctl}
DB=inboxctl_bench_walrate

die() { printf 'bench/wal-rate.sh: %s\n' "$*" >&2; exit 1; }
for tool in psql pgbench awk sort; do
    command -v "$tool" >/dev/null || die "$tool is required"
done
for rate in $RATES; do
    [[ $rate =~ ^[0-9]+$ ]] || die "RATES must be whole MB/s, not '$rate'"
done
[[ $SECONDS_PER_RATE =~ ^[1-9][0-9]*$ ]] || die "STEP_SECONDS must be a whole number of at least 1"
[[ $MESSAGE_KB =~ ^[1-9][0-9]*$ ]] || die "MESSAGE_KB must be a whole number of at least 1"
case $COMMITS in
    0) TRANSACTIONAL=false ;;
    1) TRANSACTIONAL=true ;;
    *) die "COMMITS must be 0 or 1, not '$COMMITS'" ;;
esac
if [ ! -x "$INBOXCTL" ]; then
    [ "$INBOXCTL" = target/release/inboxctl ] || die "INBOXCTL=$INBOXCTL is not an executable"
    cargo build --release --quiet
fi

base=${BENCH_PG_ADMIN%%\?*}
query=
[[ $BENCH_PG_ADMIN == *\?* ]] && query="?${BENCH_PG_ADMIN#*\?}"
URL="${base%/*}/$DB$query"
psql_admin() { psql "$BENCH_PG_ADMIN" -X -q -v ON_ERROR_STOP=1 "$@"; }

WORK=$(mktemp -d)
cleanup() {
    local status=$?
    wait 2>/dev/null || true
    psql_admin -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

psql_admin -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
DATABASE_URL=$URL "$INBOXCTL" -q migrate run >/dev/null

cat >"$WORK/insert.sql" <<'SQL'
INSERT INTO processed_messages (consumer, event_id) VALUES ('bench-writer', md5(random()::text || clock_timestamp()::text));
SQL
cat >"$WORK/wal.sql" <<SQL
SELECT pg_logical_emit_message($TRANSACTIONAL, 'inboxctl-bench', repeat('x', $MESSAGE_KB * 1024));
SQL

wal_stats() { psql_admin -At -F ' ' -c "SELECT wal_bytes FROM pg_stat_wal"; }

# p99 of the inserter's log: "count p50_ms p99_ms", leaving out its first second (connecting,
# catalog caches) and transaction 0.
latency_stats() {
    cat "$1".* |
        awk -v from="$2" '$2 > 0 { t = $5 + $6 / 1e6; if (t >= from) print $3 }' | sort -n |
        awk '{ v[NR] = $1 }
             END {
                 if (NR == 0) { print "0 0 0"; exit }
                 i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
                 printf "%d %.2f %.2f\n", NR, v[i50] / 1000, v[i99] / 1000
             }'
}

echo "WAL rate against a single-row inserter's latency, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, PostgreSQL $(psql_admin -At -c "SHOW server_version")"
echo "${SECONDS_PER_RATE}s per rate, messages of $MESSAGE_KB kB (transactional: $TRANSACTIONAL); wal_writer_flush_after $(psql_admin -At -c "SHOW wal_writer_flush_after"), wal_buffers $(psql_admin -At -c "SHOW wal_buffers")"
echo
printf '%-8s %-22s %-9s %-9s %-9s %s\n' "asked" "WAL written" "inserts" "p50 ms" "p99 ms" "p99 / first idle"
idle_p99=
step=0
for rate in $RATES; do
    step=$((step + 1))
    psql "$URL" -X -q -c "CHECKPOINT"
    sync
    before=$(wal_stats)
    started=$(date +%s.%N)
    pgbench -n -c 1 -j 1 -T "$SECONDS_PER_RATE" -f "$WORK/insert.sql" --log \
        --log-prefix="$WORK/insert$step" "$URL" >"$WORK/insert$step.out" 2>&1 &
    inserter=$!
    writer=
    if [ "$rate" -gt 0 ]; then
        tps=$(awk -v r="$rate" -v k="$MESSAGE_KB" 'BEGIN { printf "%d", r * 1024 / k }')
        PGOPTIONS="-c synchronous_commit=off" \
            pgbench -n -c 1 -j 1 -T "$SECONDS_PER_RATE" -R "$tps" -f "$WORK/wal.sql" "$URL" \
            >"$WORK/wal$step.out" 2>&1 &
        writer=$!
    fi
    wait "$inserter" || { cat "$WORK/insert$step.out" >&2; die "the inserter failed"; }
    if [ -n "$writer" ]; then
        wait "$writer" || { cat "$WORK/wal$step.out" >&2; die "the WAL writer failed"; }
    fi
    ended=$(date +%s.%N)
    after=$(wal_stats)
    read -r count p50 p99 <<<"$(latency_stats "$WORK/insert$step" "$(awk -v s="$started" 'BEGIN { printf "%.6f", s + 1 }')")"
    [ -z "$idle_p99" ] && idle_p99=$p99
    written=$(awk -v b="$before" -v a="$after" -v s="$started" -v e="$ended" \
        'BEGIN { mb = (a - b) / 1048576; printf "%.0f MB at %.1f MB/s", mb, mb / (e - s) }')
    printf '%-8s %-22s %-9s %-9s %-9s %s\n' "$rate MB/s" "$written" "$count" "$p50" "$p99" \
        "$(awk -v p="$p99" -v i="$idle_p99" 'BEGIN { printf "%.2fx", p / i }')"
done
