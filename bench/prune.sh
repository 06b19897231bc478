#!/usr/bin/env bash
# Benchmark: `inboxctl prune` against one unbounded DELETE on PostgreSQL.
#
# Two identical tables of ROWS rows, half of them older than the cutoff. On one, `inboxctl
# prune --before CUTOFF` deletes the old half in batches; on the other, one statement
# `DELETE FROM processed_messages WHERE processed_at < CUTOFF` does. During each, and once
# with nothing else running, a pgbench client inserts single rows (one autocommit INSERT per
# transaction, as a consumer does) and its latencies are logged.
#
# The pair runs ROUNDS times, each round on fresh copies of one seeded table, the order of
# the two alternating between rounds. With COPIES=pair (the default) a round copies the
# table twice at its start, and its second phase runs on a server the first has just loaded
# (shared buffers full of the first table's pages); with COPIES=each every phase gets a copy
# of its own made just before it, after the other's was dropped, so that both start with
# none of the benchmark's pages in shared buffers. Prints each round: seconds and rows/s
# of each, prune's rate as a share of the DELETE's, the inserter's p99 latency idle and
# during each, how many inserts took over twice the idle p99, and the WAL the server wrote
# during each (pg_stat_wal: how much, how many full-page images, how fast); then the
# medians over the rounds, the share of slow inserts over all of them, and whether the
# medians meet the goals:
#   prune >= 70% of the unbounded DELETE's rate, inserter p99 during prune <= 2x idle.
# Timings are reported, never asserted. The script fails only when a run deletes the wrong
# number of rows or a tool fails.
#
# Environment:
#   BENCH_PG_ADMIN  admin URL on a server that may CREATE DATABASE
#                   (default postgres://postgres@127.0.0.1:5432/test)
#   ROWS            rows per table, even (default 1000000)
#   ROUNDS          pairs of runs (default 4: as many of each order)
#   BATCH           prune --batch-size (default: inboxctl's own default)
#   PRUNE_ARGS      more prune arguments, e.g. "--pause 2ms" or "--strategy index"
#   INBOXCTL        the binary (default target/release/inboxctl, built when missing)
#   IDLE_SECONDS    how long the idle inserter runs before each phase (default 10)
#   ORDER           alternate (default), prune-first or delete-first
#   COPIES          pair (default) or each: when the copies are made (above)
#   REFERENCE_SQL   what psql runs in place of the unbounded DELETE, {cutoff} standing for
#                   the cutoff; it must delete ROWS/2 rows, and may begin with SET commands,
#                   e.g. "SET enable_seqscan = off; DELETE FROM processed_messages WHERE
#                   ctid >= '(0,0)' AND ctid < '(4294967295,0)' AND processed_at < '{cutoff}'"
#                   (the same DELETE, reading the pages as prune's page ranges do)
#   KEEP_DBS=1      keep the two bench databases afterwards
#   SCHED=1         also print, for each window, the CPU time and the time spent waiting
#                   for a CPU (the run queue) of the server's processes and the clients,
#                   from /proc/PID/schedstat (the server must run on this machine; see
#                   bench/schedstat.py)
#   PIN=1           the inserter on CPU 0 and the deleting side on CPU 1: pgbench and its
#                   backends on 0, prune or psql and their backends on 1 (taskset; the
#                   server's processes that were already running stay where they were). The
#                   server must run on this machine, this user must be allowed to set its
#                   processes' affinity, and the inserter connects as the role
#                   inboxctl_bench_writer (made for the run, a member of BENCH_PG_ADMIN's
#                   user), which the server must let in as it lets that user in. The
#                   postmaster runs on CPU 1 meanwhile; its affinity is restored at the end.
# Put ?sslmode=disable on BENCH_PG_ADMIN to measure without TLS on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_PG_ADMIN=${BENCH_PG_ADMIN:-postgres://postgres@127.0.0.1:5432/test}
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-4}
ORDER=${ORDER:-alternate}
COPIES=${COPIES:-pair}
REFERENCE_SQL=${REFERENCE_SQL:-"DELETE FROM processed_messages WHERE processed_at < TIMESTAMPTZ '{cutoff}'"}
BATCH=${BATCH:-}
INBOXCTL=${INBOXCTL:-target/release/inboxctl}
SCHED=${SCHED:-0}
PIN=${PIN:-0}
IDLE_SECONDS=${IDLE_SECONDS:-10}
# Longest a phase may run before the inserter gives up (seconds): keeps pgbench bounded.
MAX_PHASE_SECONDS=${MAX_PHASE_SECONDS:-1800}
# The inserter runs as back-to-back pgbench runs of this many seconds each, so that every
# run ends normally and its log is complete; only transactions that completed inside a
# phase's window are counted.
CHUNK_SECONDS=2

DB_BUILD=inboxctl_bench_build
DB_SEED=inboxctl_bench_seed
DB_PRUNE=inboxctl_bench_prune
DB_DELETE=inboxctl_bench_delete
# Rows are processed_at = T0 - k seconds for k = ROWS .. 1, oldest first in the heap as an
# inbox written over time is. The cutoff T0 - ROWS/2 s leaves exactly ROWS/2 rows older;
# the row processed exactly at the cutoff is kept by both.
T0_EPOCH=$(date -u -d '2026-01-01T00:00:00Z' +%s)

die() { printf 'bench/prune.sh: %s\n' "$*" >&2; exit 1; }
log() { printf '==> %s\n' "$*" >&2; }

for tool in psql pgbench awk sort; do
    command -v "$tool" >/dev/null || die "$tool is required"
done
case $SCHED in
    0) ;;
    1) command -v python3 >/dev/null || die "SCHED=1 needs python3" ;;
    *) die "SCHED must be 0 or 1, not '$SCHED'" ;;
esac
case $PIN in
    0) ;;
    1)
        command -v python3 >/dev/null || die "PIN=1 needs python3"
        command -v taskset >/dev/null || die "PIN=1 needs taskset (util-linux)"
        taskset -c 0,1 true 2>/dev/null || die "PIN=1 needs CPUs 0 and 1"
        ;;
    *) die "PIN must be 0 or 1, not '$PIN'" ;;
esac
[[ $ROWS =~ ^[0-9]+$ ]] && [ "$ROWS" -ge 2 ] && [ $((ROWS % 2)) -eq 0 ] ||
    die "ROWS must be an even number of at least 2, not '$ROWS'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a whole number of at least 1, not '$ROUNDS'"
case $ORDER in
    alternate | prune-first | delete-first) ;;
    *) die "ORDER must be alternate, prune-first or delete-first, not '$ORDER'" ;;
esac
case $COPIES in
    pair | each) ;;
    *) die "COPIES must be pair or each, not '$COPIES'" ;;
esac
if [ -n "$BATCH" ] && ! [[ $BATCH =~ ^[1-9][0-9]*$ ]]; then
    die "BATCH must be a whole number of at least 1, not '$BATCH'"
fi
if [ ! -x "$INBOXCTL" ]; then
    [ "$INBOXCTL" = target/release/inboxctl ] || die "INBOXCTL=$INBOXCTL is not an executable"
    log "building $INBOXCTL"
    cargo build --release --quiet
fi

# postgres://user@host:port/db?x -> the same URL naming another database.
db_url() {
    local base=${BENCH_PG_ADMIN%%\?*} query=
    [[ $BENCH_PG_ADMIN == *\?* ]] && query="?${BENCH_PG_ADMIN#*\?}"
    printf '%s/%s%s' "${base%/*}" "$1" "$query"
}
URL_BUILD=$(db_url "$DB_BUILD")
URL_SEED=$(db_url "$DB_SEED")
URL_PRUNE=$(db_url "$DB_PRUNE")
URL_DELETE=$(db_url "$DB_DELETE")

psql_admin() { psql "$BENCH_PG_ADMIN" -X -q -v ON_ERROR_STOP=1 "$@"; }
psql_on() { local url=$1; shift; psql "$url" -X -q -v ON_ERROR_STOP=1 "$@"; }

WORK=$(mktemp -d)
# Set by pin_setup when PIN=1, so that cleanup can undo what it did.
POSTMASTER_PID=
POSTMASTER_CPUS=
PIN_PID=
WRITER_ROLE=inboxctl_bench_writer
cleanup() {
    local status=$?
    [ -f "$WORK/stop" ] || touch "$WORK/stop"
    [ -z "$PIN_PID" ] || kill -TERM "$PIN_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ -n "$POSTMASTER_CPUS" ]; then
        taskset -pc "$POSTMASTER_CPUS" "$POSTMASTER_PID" >/dev/null ||
            printf 'bench/prune.sh: could not give the postmaster (%s) its CPUs %s back\n' \
                "$POSTMASTER_PID" "$POSTMASTER_CPUS" >&2
        psql_admin -c "DROP ROLE IF EXISTS $WRITER_ROLE" >/dev/null 2>&1 || true
    fi
    if [ "${KEEP_DBS:-0}" != 1 ]; then
        psql_admin -c "DROP DATABASE IF EXISTS $DB_PRUNE" -c "DROP DATABASE IF EXISTS $DB_DELETE" \
            -c "DROP DATABASE IF EXISTS $DB_SEED" -c "DROP DATABASE IF EXISTS $DB_BUILD" >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# await_ready FILE PID NAME: waits up to 5 s for the helper PID (NAME) to create FILE.
await_ready() {
    local _
    for _ in $(seq 1 500); do
        [ -e "$1" ] && return
        kill -0 "$2" 2>/dev/null || die "$3 failed to start"
        sleep 0.01
    done
    die "$3 did not start within 5 s"
}

# ---------------------------------------------------------------------------------------
# PIN=1: the inserter on CPU 0, the deleting side on CPU 1.
# ---------------------------------------------------------------------------------------
INSERTER_ON=()
DELETER_ON=()
# inserter_url URL: the URL the inserter connects with.
inserter_url() {
    if [ "$PIN" = 1 ]; then
        # postgres://user:password@host/db -> postgres://WRITER_ROLE@host/db
        sed -E "s#^([a-z]+://)([^@/]*@)?#\\1$WRITER_ROLE@#" <<<"$1"
    else
        printf '%s' "$1"
    fi
}
# pin_setup: the postmaster onto CPU 1, so that the backends of prune and psql start there;
# bench/pin.py moves the inserter's (role WRITER_ROLE) to CPU 0 as each appears.
pin_setup() {
    local data_directory
    data_directory=$(psql_admin -At -c "SHOW data_directory")
    POSTMASTER_PID=$(head -n 1 "$data_directory/postmaster.pid" 2>/dev/null) ||
        die "PIN=1 needs the server on this machine (no $data_directory/postmaster.pid here)"
    [ "$(cat "/proc/$POSTMASTER_PID/comm" 2>/dev/null)" = postgres ] ||
        die "PIN=1: process $POSTMASTER_PID of $data_directory/postmaster.pid is not the server's"
    local cpus
    cpus=$(taskset -pc "$POSTMASTER_PID") || die "PIN=1: cannot read the postmaster's CPUs"
    POSTMASTER_CPUS=${cpus##*: }
    psql_admin -c "SET client_min_messages = warning" -c "DROP ROLE IF EXISTS $WRITER_ROLE" \
        -c "CREATE ROLE $WRITER_ROLE LOGIN IN ROLE $(psql_admin -At -c "SELECT current_user")"
    taskset -pc 1 "$POSTMASTER_PID" >/dev/null || die "PIN=1: cannot set the postmaster's CPUs"
    taskset -c 1 python3 bench/pin.py "$POSTMASTER_PID" "$WRITER_ROLE" 0 "$WORK/pin.ready" &
    PIN_PID=$!
    await_ready "$WORK/pin.ready" "$PIN_PID" bench/pin.py
    INSERTER_ON=(taskset -c 0)
    DELETER_ON=(taskset -c 1)
}

# pin_check: every backend of the inserter runs on CPU 0 alone; otherwise says which does
# not and fails. A backend that has only just connected (pgbench between two of its runs)
# may not have been moved yet, so it is looked at again for up to 100 ms.
pin_check() {
    local pid found stray _
    for _ in $(seq 1 10); do
        found=0
        stray=
        for pid in $(cat "/proc/$POSTMASTER_PID/task/$POSTMASTER_PID/children"); do
            tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q ": $WRITER_ROLE \|^postgres: $WRITER_ROLE " || continue
            found=1
            [ "$(taskset -pc "$pid" 2>/dev/null | sed 's/.*: //')" = 0 ] || stray=$pid
        done
        [ "$found" = 1 ] && [ -z "$stray" ] && return 0
        sleep 0.01
    done
    if [ -n "$stray" ]; then
        echo "the inserter's backend $stray is not on CPU 0 alone"
    else
        echo "no backend of $WRITER_ROLE found"
    fi
    return 1
}

# ---------------------------------------------------------------------------------------
# Databases: one seeded, migrated and vacuumed; each round's two are copies of it.
# ---------------------------------------------------------------------------------------
CUTOFF_EPOCH=$((T0_EPOCH - ROWS / 2))
CUTOFF=$(date -u -d "@$CUTOFF_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
T0=$(date -u -d "@$T0_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
HALF=$((ROWS / 2))
REFERENCE_STATEMENT=${REFERENCE_SQL//\{cutoff\}/$CUTOFF}

# Copies are made as files (PostgreSQL 15 would otherwise write each copy through the WAL).
if [ "$(psql_admin -At -c "SHOW server_version_num")" -ge 150000 ]; then
    COPY_STRATEGY=" STRATEGY = FILE_COPY"
else
    COPY_STRATEGY=
fi

# The table is seeded in DB_BUILD and copied to DB_SEED, and DB_BUILD dropped: dropping a
# database frees its pages in shared buffers, which the seeding had filled, so that the
# first phase starts as the others do.
log "creating $DB_SEED"
psql_admin -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB_PRUNE" \
    -c "DROP DATABASE IF EXISTS $DB_DELETE" -c "DROP DATABASE IF EXISTS $DB_SEED" \
    -c "DROP DATABASE IF EXISTS $DB_BUILD" -c "CREATE DATABASE $DB_BUILD"
DATABASE_URL=$URL_BUILD "$INBOXCTL" -q migrate run >/dev/null
log "seeding $ROWS rows (4 consumers, topic orders, 12 partitions), T0 $T0, cutoff $CUTOFF"
seed_started=$(now)
psql_on "$URL_BUILD" <<SQL
INSERT INTO processed_messages (consumer, event_id, topic, "partition", "offset", processed_at)
SELECT 'consumer-' || (i % 4), 'evt-' || i, 'orders', i % 12, i,
       TIMESTAMPTZ '$T0' - make_interval(secs => $ROWS + 1 - i)
FROM generate_series(1, $ROWS) AS i
ORDER BY i;
VACUUM ANALYZE processed_messages;
SQL
log "seeded in $(elapsed "$seed_started" "$(now)") s"
psql_admin -c "CREATE DATABASE $DB_SEED TEMPLATE $DB_BUILD$COPY_STRATEGY" -c "DROP DATABASE $DB_BUILD"

older_than_cutoff() {
    psql_on "$1" -At -c "SELECT count(*) FROM processed_messages WHERE processed_at < TIMESTAMPTZ '$CUTOFF'"
}
older=$(older_than_cutoff "$URL_SEED")
[ "$older" -eq "$HALF" ] || die "seeding left $older rows older than the cutoff, expected $HALF"
table_size=$(psql_on "$URL_SEED" -At -c \
    "SELECT pg_size_pretty(pg_total_relation_size('processed_messages'))")

# fresh_copies DB...: drops both phases' databases, then makes each DB named an identical
# copy of the seeded table (same pages, same statistics), written out by a checkpoint and
# `sync`: the idle inserter that comes next must not share the disk with the writing back
# of the copies, or its idle p99 is no idle figure.
fresh_copies() {
    local creates=() db
    for db in "$@"; do creates+=(-c "CREATE DATABASE $db TEMPLATE $DB_SEED$COPY_STRATEGY"); done
    psql_admin -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB_PRUNE" \
        -c "DROP DATABASE IF EXISTS $DB_DELETE" "${creates[@]}" -c "CHECKPOINT"
    sync
}

# ---------------------------------------------------------------------------------------
# The inserter: one client, one single-row autocommit INSERT per transaction.
# ---------------------------------------------------------------------------------------
cat >"$WORK/insert.sql" <<'SQL'
INSERT INTO processed_messages (consumer, event_id) VALUES ('bench-writer', md5(random()::text || clock_timestamp()::text));
SQL

# start_inserter URL NAME: pgbench runs back to back until $WORK/stop.NAME exists. Its
# output goes to files, never to the caller's stdout: `idle` runs inside $(…), which would
# otherwise wait for the inserter to end.
start_inserter() {
    local url=$1 name=$2 inserter problem
    inserter=$(inserter_url "$url")
    mkdir -p "$WORK/$name"
    (
        deadline=$(($(date +%s) + MAX_PHASE_SECONDS))
        chunk=0
        while [ ! -e "$WORK/stop.$name" ] && [ ! -e "$WORK/stop" ] && [ "$(date +%s)" -lt "$deadline" ]; do
            chunk=$((chunk + 1))
            "${INSERTER_ON[@]}" pgbench -n -c 1 -j 1 -T "$CHUNK_SECONDS" -f "$WORK/insert.sql" \
                --log --log-prefix="$WORK/$name/chunk$chunk" "$inserter" \
                >>"$WORK/$name/pgbench.out" 2>&1 || { echo "pgbench failed" >>"$WORK/$name/failed"; break; }
        done
    ) >/dev/null &
    INSERTER_PID=$!
    # Let the first pgbench connect before the phase starts.
    sleep 1
    if [ "$PIN" = 1 ] && ! problem=$(pin_check); then
        # Stopped first: its sessions would keep cleanup from dropping the database.
        touch "$WORK/stop.$name"
        wait "$INSERTER_PID" || true
        die "PIN=1: $problem"
    fi
    if [ "$SCHED" = 1 ]; then
        python3 bench/schedstat.py "$url" "$WORK/$name/schedstat" &
        PROBE_PID=$!
        await_ready "$WORK/$name/schedstat.ready" "$PROBE_PID" bench/schedstat.py
    fi
}

stop_inserter() {
    local name=$1
    if [ "$SCHED" = 1 ]; then
        kill -TERM "$PROBE_PID"
        wait "$PROBE_PID" || die "bench/schedstat.py failed"
    fi
    touch "$WORK/stop.$name"
    wait "$INSERTER_PID"
    if [ -e "$WORK/$name/failed" ]; then
        cat "$WORK/$name/pgbench.out" >&2
        die "the inserter ($name) failed"
    fi
}

# latency_stats NAME FROM TO [SLOW_MS]: "count p50_ms p99_ms max_ms slow" of the inserts that
# completed in [FROM, TO] (epoch seconds), slow being how many took longer than SLOW_MS (0
# without it). Log line: client tx latency_us script epoch_s epoch_us. The first
# transaction of each pgbench run (tx 0) is left out: it pays for the new session's catalog
# caches, not for anything the phase does.
latency_stats() {
    local name=$1 from=$2 to=$3 slow_ms=${4:-0}
    cat "$WORK/$name"/chunk*.* 2>/dev/null |
        awk -v from="$from" -v to="$to" '$2 > 0 { t = $5 + $6 / 1e6; if (t >= from && t <= to) print $3 }' |
        sort -n |
        awk -v slow_us="$(calc %.0f "$slow_ms * 1000")" '
             { v[NR] = $1; if (slow_us > 0 && $1 > slow_us) slow++ }
             END {
                 if (NR == 0) { print "no inserts completed in the window" > "/dev/stderr"; exit 1 }
                 i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
                 printf "%d %.2f %.2f %.2f %d\n", NR, v[i50] / 1000, v[i99] / 1000, v[NR] / 1000, slow
             }'
}

checkpoint() { psql_on "$1" -c "CHECKPOINT" >/dev/null; }

# wal_stats: "bytes full_page_images" written by the whole server so far (pg_stat_wal,
# PostgreSQL 14 and later; "- -" before). The inserter's own WAL is in it too, a few
# hundred kB a phase. Its counts of writes and syncs are left out: a backend adds its own
# to them at most once a second, so a phase's window gets none of the inserter's or a
# whole session's.
wal_stats() { psql_admin -At -F ' ' -c "SELECT wal_bytes, wal_fpi FROM pg_stat_wal" 2>/dev/null || echo "- -"; }
# wal_between BEFORE AFTER SECONDS: "MB (full pages) at MB/s", or "-" without pg_stat_wal.
wal_between() {
    awk -v b="$1" -v a="$2" -v s="$3" 'BEGIN {
        split(b, x, " "); split(a, y, " ")
        if (x[1] == "-" || y[1] == "-") { print "-"; exit }
        mb = (y[1] - x[1]) / 1048576
        printf "%.1f MB (%d full pages) at %.0f MB/s", mb, y[2] - x[2], mb / s
    }'
}

# slow_threshold IDLE_STATS: twice the idle p99, in ms: an insert slower than that is slow.
slow_threshold() { local p99; read -r _ _ p99 _ <<<"$1"; calc %.3f "2 * $p99"; }

# idle URL NAME: the inserter alone for IDLE_SECONDS.
idle() {
    local url=$1 name=$2 from to
    checkpoint "$url"
    start_inserter "$url" "$name"
    from=$(now)
    sleep "$IDLE_SECONDS"
    to=$(now)
    stop_inserter "$name"
    latency_stats "$name" "$from" "$to"
}

# ---------------------------------------------------------------------------------------
# Phase: inboxctl prune on DB_PRUNE.
# ---------------------------------------------------------------------------------------
batch_args=()
[ -n "$BATCH" ] && batch_args=(--batch-size "$BATCH")
# shellcheck disable=SC2206 # split on purpose: several arguments in one variable
batch_args+=(${PRUNE_ARGS:-})

phase_prune() {
    log "idle inserter on $DB_PRUNE (${IDLE_SECONDS}s)"
    idle_prune=$(idle "$URL_PRUNE" idle_prune)

    log "inboxctl prune --before $CUTOFF ${batch_args[*]}"
    checkpoint "$URL_PRUNE"
    start_inserter "$URL_PRUNE" prune
    local started ended
    wal_before=$(wal_stats)
    started=$(now)
    DATABASE_URL=$URL_PRUNE "${DELETER_ON[@]}" "$INBOXCTL" prune --before "$CUTOFF" --yes --format json \
        "${batch_args[@]}" >"$WORK/prune.json"
    ended=$(now)
    wal_prune=$(wal_between "$wal_before" "$(wal_stats)" "$(elapsed "$started" "$ended")")
    stop_inserter prune
    during_prune=$(latency_stats prune "$started" "$ended" "$(slow_threshold "$idle_prune")")
    prune_wall=$(elapsed "$started" "$ended")

    json_field() { sed -n "s/^  \"$1\": \([0-9.]*\),\{0,1\}\$/\1/p" "$WORK/prune.json"; }
    prune_deleted=$(json_field rows_deleted)
    prune_batches=$(json_field batches)
    prune_loop=$(calc %.3f "$(json_field elapsed_ms) / 1000")
    prune_strategy=$(sed -n 's/^  "strategy": "\([a-z]*\)",$/\1/p' "$WORK/prune.json")
    [ "$prune_deleted" = "$HALF" ] || die "prune deleted '$prune_deleted' rows, expected $HALF"
    local left
    left=$(older_than_cutoff "$URL_PRUNE")
    [ "$left" -eq 0 ] || die "prune left $left rows older than the cutoff"
}

# ---------------------------------------------------------------------------------------
# Phase: one unbounded DELETE on DB_DELETE.
# ---------------------------------------------------------------------------------------
phase_delete() {
    log "idle inserter on $DB_DELETE (${IDLE_SECONDS}s)"
    idle_delete=$(idle "$URL_DELETE" idle_delete)

    log "$REFERENCE_STATEMENT"
    checkpoint "$URL_DELETE"
    start_inserter "$URL_DELETE" delete
    local started ended output
    wal_before=$(wal_stats)
    started=$(now)
    output=$("${DELETER_ON[@]}" psql "$URL_DELETE" -X -v ON_ERROR_STOP=1 -c '\timing on' \
        -c "$REFERENCE_STATEMENT")
    ended=$(now)
    wal_delete=$(wal_between "$wal_before" "$(wal_stats)" "$(elapsed "$started" "$ended")")
    stop_inserter delete
    during_delete=$(latency_stats delete "$started" "$ended" "$(slow_threshold "$idle_delete")")
    delete_wall=$(elapsed "$started" "$ended")
    delete_deleted=$(sed -n 's/^DELETE \([0-9]*\)$/\1/p' <<<"$output")
    delete_statement=$(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$output")
    delete_statement=$(calc %.3f "$delete_statement / 1000")
    [ "$delete_deleted" = "$HALF" ] || die "DELETE deleted '$delete_deleted' rows, expected $HALF"
}

calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# After a phase, its table is vacuumed and analysed at once: autovacuum would otherwise
# clean up the dead rows, and analyse the changed table, whenever its next round comes,
# often during the other phase.
vacuum() { psql_on "$1" -c "VACUUM ANALYZE processed_messages" >/dev/null; }
goal() { awk "BEGIN { exit !($1) }" && echo met || echo "NOT met"; }

[ "$PIN" = 0 ] || pin_setup

batch_label=${batch_args[*]:-default arguments}
echo "inboxctl prune benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, PostgreSQL $(psql_admin -At -c "SHOW server_version")"
echo "table: $ROWS rows ($table_size with indexes), 4 consumers; cutoff $CUTOFF; $HALF rows older, deleted by each"
echo "prune with $batch_label; $ROUNDS rounds, order $ORDER, copies $COPIES"
echo "reference: $REFERENCE_STATEMENT"
[ "$PIN" = 0 ] || echo "pinned: the inserter (pgbench and its backends) on CPU 0; prune, psql and their backends on CPU 1"
echo
echo "Seconds are wall clock from start to exit (prune: start-up, connecting, counting and"
echo "deleting; psql: start-up, connecting and the DELETE); in brackets prune's own elapsed_ms"
echo "over its delete loop and psql's \\timing of the statement. p99 is the inserter's, in ms,"
echo "with its ratio to the idle p99 measured just before on the same database."
echo
round_row() { printf '%-5s %-6s %-15s %-15s %-13s %-18s %-18s %s\n' "$@"; }
round_row round first "prune s (loop)" "DELETE s (stmt)" "rate (loop)" "prune p99 (idle)" "DELETE p99 (idle)" strategy
RESULTS=$WORK/results
: >"$RESULTS"
for round in $(seq 1 "$ROUNDS"); do
    first=$ORDER
    if [ "$ORDER" = alternate ]; then
        if [ $((round % 2)) -eq 1 ]; then first=prune-first; else first=delete-first; fi
    fi
    log "round $round of $ROUNDS ($first): fresh copies of the table"
    rm -rf "$WORK"/idle_prune "$WORK"/prune "$WORK"/idle_delete "$WORK"/delete "$WORK"/stop.*
    case $COPIES-$first in
        pair-prune-first) fresh_copies "$DB_PRUNE" "$DB_DELETE"; phase_prune; vacuum "$URL_PRUNE"; phase_delete ;;
        pair-delete-first) fresh_copies "$DB_PRUNE" "$DB_DELETE"; phase_delete; vacuum "$URL_DELETE"; phase_prune ;;
        each-prune-first) fresh_copies "$DB_PRUNE"; phase_prune; fresh_copies "$DB_DELETE"; phase_delete ;;
        each-delete-first) fresh_copies "$DB_DELETE"; phase_delete; fresh_copies "$DB_PRUNE"; phase_prune ;;
    esac
    read -r _ _ idle_prune_p99 _ <<<"$idle_prune"
    read -r _ _ idle_delete_p99 _ <<<"$idle_delete"
    read -r prune_inserts _ prune_p99 _ prune_slow <<<"$during_prune"
    read -r delete_inserts _ delete_p99 _ delete_slow <<<"$during_delete"
    ratio=$(calc %.1f "100 * $delete_wall / $prune_wall")
    inner_ratio=$(calc %.1f "100 * $delete_statement / $prune_loop")
    prune_vs_idle=$(calc %.2f "$prune_p99 / $idle_prune_p99")
    delete_vs_idle=$(calc %.2f "$delete_p99 / $idle_delete_p99")
    echo "$ratio $inner_ratio $prune_vs_idle $delete_vs_idle $prune_wall $delete_wall" \
        "$prune_inserts $prune_slow $delete_inserts $delete_slow" >>"$RESULTS"
    round_row "$round" "${first%-first}" "$prune_wall ($prune_loop)" "$delete_wall ($delete_statement)" \
        "$ratio% ($inner_ratio%)" "$prune_p99 (${prune_vs_idle}x)" "$delete_p99 (${delete_vs_idle}x)" \
        "$prune_strategy, $prune_batches batches"
    echo "      slow inserts (over 2x idle p99): prune $prune_slow of $prune_inserts, DELETE $delete_slow of $delete_inserts"
    echo "      WAL written: prune $wal_prune; DELETE $wal_delete"
    if [ "$SCHED" = 1 ]; then
        for name in idle_prune prune idle_delete delete; do
            sed "s/^/      $name: /" "$WORK/$name/schedstat"
        done
    fi
done

# median COLUMN: the median of that column of the rounds' results.
median() {
    awk -v c="$1" '{ print $c }' "$RESULTS" | sort -g |
        awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
rate_median=$(median 1)
loop_median=$(median 2)
p99_median=$(median 3)
delete_p99_median=$(median 4)
echo
echo "medians over $ROUNDS rounds: prune at $rate_median% of the DELETE's rate as whole commands ($loop_median% loop against statement);"
echo "  inserter p99 ${p99_median}x idle during prune, ${delete_p99_median}x during the DELETE"
# slow_share INSERTS SLOW: "slow of inserts (percent)" over all rounds.
slow_share() {
    awk -v n="$1" -v s="$2" '{ inserts += $n; slow += $s }
        END { printf "%d of %d (%.2f%%)", slow, inserts, inserts ? 100 * slow / inserts : 0 }' "$RESULTS"
}
echo "  inserts slower than 2x idle p99, all rounds: during prune $(slow_share 7 8), during the DELETE $(slow_share 9 10)"
echo "goal: prune >= 70% of the unbounded DELETE's rate (whole commands, median): $(goal "$rate_median >= 70")"
echo "goal: inserter p99 during prune <= 2x its idle p99 (median): $(goal "$p99_median <= 2")"
