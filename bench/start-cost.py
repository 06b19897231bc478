#!/usr/bin/env python3
"""What starting a command costs a concurrent single-row inserter on PostgreSQL.

usage: bench/start-cost.py [NAME=COMMAND ...]

Creates the database inboxctl_bench_start (migrated, 100,000 rows of four consumers) next
to BENCH_PG_ADMIN's database. There, one pgbench client inserts single rows into
processed_messages for RUN_SECONDS, as bench/prune.sh's inserter does. Meanwhile the commands
run one after another, round robin, one every INTERVAL seconds; in a COMMAND, {url} stands
for the database's URL and {inboxctl} for the binary. Afterwards, for each command: how
long it ran (median), and of the inserts that completed within WINDOW_MS of its start, how
many were slower than twice the p99 of the inserts that completed away from every command
(idle). Timings are reported, never asserted; the database is dropped at the end.

Without arguments, the commands are:
  true      bash -c true: starting any process
  tcp       a TCP connection to the server, closed at once (the server forks a process)
  psql      psql running SELECT 1
  version   inboxctl --version: starting the binary
  dry-run   inboxctl prune --dry-run for a consumer with no rows: connecting, the checks
            and one count

Environment:
  BENCH_PG_ADMIN  admin URL on a server that may CREATE DATABASE
                  (default postgres://postgres@127.0.0.1:5432/test)
  INBOXCTL        the binary (default target/release/inboxctl, built when missing)
  RUN_SECONDS     how long the inserter runs (default 120)
  INTERVAL        seconds between two commands (default 0.25)
  WINDOW_MS       the window after a command's start that is counted (default 30)
"""
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ADMIN = os.environ.get("BENCH_PG_ADMIN", "postgres://postgres@127.0.0.1:5432/test")
INBOXCTL = os.path.abspath(os.environ.get("INBOXCTL", "target/release/inboxctl"))
DATABASE = "inboxctl_bench_start"


def die(message):
    sys.exit(f"bench/start-cost.py: {message}")


def number(name, default):
    text = os.environ.get(name, default)
    try:
        value = float(text)
    except ValueError:
        die(f"{name} must be a number, not '{text}'")
    if value <= 0:
        die(f"{name} must be more than 0, not '{text}'")
    return value


SECONDS, INTERVAL, WINDOW_MS = number("RUN_SECONDS", "120"), number("INTERVAL", "0.25"), number("WINDOW_MS", "30")
if SECONDS < 10:
    die(f"RUN_SECONDS must be at least 10, not {SECONDS:g}")
for tool in ("psql", "pgbench"):
    if shutil.which(tool) is None:
        die(f"{tool} is required")
if not os.access(INBOXCTL, os.X_OK):
    if "INBOXCTL" in os.environ:
        die(f"INBOXCTL={INBOXCTL} is not an executable")
    subprocess.run(["cargo", "build", "--release", "--quiet"], check=True)

admin = urllib.parse.urlsplit(ADMIN)
url = urllib.parse.urlunsplit(admin._replace(path=f"/{DATABASE}"))
port = admin.port or 5432
host = admin.hostname or "127.0.0.1"
commands = [arg.split("=", 1) for arg in sys.argv[1:]] or [
    ["true", "bash -c true"],
    ["tcp", f"bash -c 'exec 3<>/dev/tcp/{host}/{port}'"],
    ["psql", "psql '{url}' -Xqc 'SELECT 1'"],
    ["version", "'{inboxctl}' --version"],
    ["dry-run", "DATABASE_URL='{url}' '{inboxctl}' prune --older-than 400d --consumer nobody --dry-run"],
]
for command in commands:
    if len(command) != 2 or not command[0] or not command[1]:
        die(f"a command is NAME=COMMAND, not '{'='.join(command)}'")


def psql(target, *statements):
    args = ["psql", target, "-X", "-q", "-v", "ON_ERROR_STOP=1"]
    for statement in statements:
        args += ["-c", statement]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)


psql(ADMIN, "SET client_min_messages = warning", f"DROP DATABASE IF EXISTS {DATABASE}", f"CREATE DATABASE {DATABASE}")
work = tempfile.mkdtemp()
try:
    subprocess.run([INBOXCTL, "-q", "migrate", "run"], env=dict(os.environ, DATABASE_URL=url), check=True,
                   stdout=subprocess.DEVNULL)
    psql(url, "INSERT INTO processed_messages (consumer, event_id, processed_at) "
              "SELECT 'c' || (i % 4), 'e' || i, now() - make_interval(days => i % 30) "
              "FROM generate_series(1, 100000) AS i",
         "VACUUM ANALYZE processed_messages", "CHECKPOINT")
    with open(f"{work}/insert.sql", "w") as script:
        script.write("INSERT INTO processed_messages (consumer, event_id) "
                     "VALUES ('bench-writer', md5(random()::text || clock_timestamp()::text));\n")
    inserter = subprocess.Popen(
        ["pgbench", "-n", "-c", "1", "-j", "1", "-T", str(int(SECONDS)), "-f", f"{work}/insert.sql",
         "--log", f"--log-prefix={work}/log", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    runs = []  # (name, started, ended), epoch seconds
    deadline = time.time() + SECONDS - 4
    while time.time() < deadline:
        name, command = commands[len(runs) % len(commands)]
        started = time.time()
        subprocess.run(command.format(url=url, inboxctl=INBOXCTL), shell=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs.append((name, started, time.time()))
        time.sleep(INTERVAL)
    if inserter.wait() != 0:
        die("the inserter (pgbench) failed")

    # Log line: client tx latency_us script epoch_s epoch_us. The first transaction of the
    # run pays for the new session's catalog caches and is left out.
    inserts = []  # (completed at, latency in ms)
    for path in glob.glob(f"{work}/log*"):
        with open(path) as log:
            for line in log:
                fields = line.split()
                if fields[1] != "0":
                    inserts.append((int(fields[4]) + int(fields[5]) / 1e6, int(fields[2]) / 1000))
    # Idle: away from every command, from its start to 50 ms after its end.
    busy = sorted((started, ended + 0.05) for _, started, ended in runs)
    idle = []
    index = 0
    for completed, latency in sorted(inserts):
        while index < len(busy) and busy[index][1] < completed:
            index += 1
        if completed >= runs[0][1] and not (index < len(busy) and busy[index][0] <= completed):
            idle.append(latency)
    if not idle:
        die("no insert completed away from the commands: make INTERVAL longer")
    idle.sort()
    idle_p99 = idle[min(len(idle) - 1, int(len(idle) * 0.99 + 0.999999) - 1)]
    slow = 2 * idle_p99
    print(f"start-cost benchmark, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}, {os.cpu_count()} cores; "
          f"inserter {SECONDS:g} s, a command every {INTERVAL:g} s")
    print(f"idle: {len(idle)} inserts, p99 {idle_p99:.3f} ms; slow means over {slow:.3f} ms "
          f"({100 * sum(latency > slow for latency in idle) / len(idle):.1f}% of idle inserts)")
    print(f"{'command':12} {'runs':>5} {'median ms':>10} {'inserts':>8} {'slow':>5} {'slow %':>7}   (first {WINDOW_MS:g} ms of each run)")
    for name, _ in commands:
        mine = [(started, ended) for n, started, ended in runs if n == name]
        if not mine:
            continue
        window = [latency for completed, latency in inserts
                  if any(started <= completed <= started + WINDOW_MS / 1000 for started, _ in mine)]
        slow_ones = sum(latency > slow for latency in window)
        median = statistics.median((ended - started) * 1000 for started, ended in mine)
        print(f"{name:12} {len(mine):5} {median:10.1f} {len(window):8} {slow_ones:5} "
              f"{100 * slow_ones / max(1, len(window)):6.1f}%")
finally:
    shutil.rmtree(work, ignore_errors=True)
    psql(ADMIN, "SET client_min_messages = warning", f"DROP DATABASE IF EXISTS {DATABASE}")
