#!/usr/bin/env bash
# Runs every test of inboxctl on a fresh or a warm machine:
#   - installs the system packages the build needs, when missing (Debian/apt);
#   - makes sure PostgreSQL (127.0.0.1:5432) and MariaDB (127.0.0.1:3306) are up;
#   - checks formatting and lints, then runs the unit and integration tests.
# Servers elsewhere: INBOXCTL_TEST_POSTGRES_URL and INBOXCTL_TEST_MYSQL_URL (an admin URL
# that may CREATE DATABASE; each test makes and drops a database of its own).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# System packages for the build: TLS for the database drivers; SSL and SASL for librdkafka,
# which rdkafka builds from source; cmake for the test broker's build. For the tests:
# openssl for the certificate of the TLS broker test, python3 for the exec handler the
# replay tests start, bsdutils for `script`, which gives prune a terminal to ask on.
missing=()
for package in pkg-config libssl-dev libsasl2-dev cmake openssl python3 bsdutils; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

wait_for() {
    local what=$1; shift
    for _ in $(seq 1 60); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 1
    done
    log "$what did not come up within 60s"
    return 1
}

if [ -z "${INBOXCTL_TEST_POSTGRES_URL:-}" ]; then
    if ! pg_isready -q -h 127.0.0.1 -p 5432; then
        log "starting PostgreSQL"
        as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start
        wait_for PostgreSQL pg_isready -q -h 127.0.0.1 -p 5432
    fi
fi
if [ -z "${INBOXCTL_TEST_MYSQL_URL:-}" ]; then
    if ! mysqladmin ping -h 127.0.0.1 -P 3306 -u root --silent >/dev/null 2>&1; then
        log "starting MariaDB"
        as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
        wait_for MariaDB mysqladmin ping -h 127.0.0.1 -P 3306 -u root --silent
    fi
fi

# The Kafka-protocol test broker (no JVM here). Built once, ~16 minutes on 2 cores, then
# found in ~/.cargo/bin; the tests start it on a free port in a temporary folder.
NISSHI_VERSION=0.8.1
export PATH="$HOME/.cargo/bin:$PATH"
if ! nisshi --version 2>/dev/null | grep -q "$NISSHI_VERSION"; then
    log "installing the nisshi $NISSHI_VERSION test broker (about 16 minutes the first time)"
    cargo install nisshi --version "$NISSHI_VERSION" --locked --ignore-rust-version \
        --no-default-features --features dynostore,libsql
fi

log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy"
cargo clippy --locked --all-targets -- -D warnings
log "cargo test"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
set +e
cargo test --locked --lib --tests 2>&1 | tee "$results"
status=${PIPESTATUS[0]}
set -e
# One closing line over every test binary.
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed\n", passed, failed }' "$results"
exit "$status"
