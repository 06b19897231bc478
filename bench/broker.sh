# Sourced by the Kafka benchmarks: builds inboxctl and the bench helper, and starts a nisshi
# broker with in-memory storage (its fastest) on a free loopback port in a temporary folder.
# Sets INBOXCTL (unless set), KB, work, BROKERS; the broker stops and the folder goes when the script exits,
# after the script's own `bench_cleanup` if it defines one.

# INBOXCTL names another build of inboxctl to measure (e.g. one of an earlier commit).
target=${CARGO_TARGET_DIR:-$PWD/target}
if [ -z "${INBOXCTL:-}" ]; then
    cargo build --release --quiet --bin inboxctl --example kafka_bench
    INBOXCTL=$target/release/inboxctl
else
    cargo build --release --quiet --example kafka_bench
fi
KB=$target/release/examples/kafka_bench

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BROKERS=127.0.0.1:$port
(cd "$work" && exec nisshi broker --storage-engine memory://bench/ --listener-url "tcp://$BROKERS" \
    --advertised-listener-url "tcp://$BROKERS" >broker.log 2>&1) &
broker=$!
stop_broker() {
    if declare -F bench_cleanup >/dev/null; then bench_cleanup; fi
    kill "$broker" 2>/dev/null || true
    wait "$broker" 2>/dev/null || true
    rm -rf "$work"
}
trap stop_broker EXIT
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
