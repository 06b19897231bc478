#!/usr/bin/env python3
"""What prune costs an application writing to the same SQLite file.

usage: bench/sqlite-writer.py [PRUNE_ARGS ...]

Makes a migrated SQLite inbox in a temporary folder and fills it with ROWS rows (default
1,000,000: 4 consumers, one row per second, oldest first), exactly half older than the
cutoff. A writer, as an application using Python's sqlite3 module with a busy timeout of
BUSY_TIMEOUT seconds (default 5), inserts one row every 5 ms, each its own transaction. It
writes alone for 3 s ("idle"), then `inboxctl prune --before CUTOFF --yes` runs with
PRUNE_ARGS (e.g. --pause 0s), then the writer runs 1 s more. Printed: prune's rows, time
and rate, and of the writer's inserts while prune ran and while it was alone, how many
completed, their median, p99 and longest time, and how many failed ("database is locked").
Timings are reported, never asserted.

Environment:
  INBOXCTL      the binary (default target/release/inboxctl)
  ROWS          rows in the table (default 1000000)
  BUSY_TIMEOUT  the writer's busy timeout in seconds (default 5)
"""
import datetime
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

INBOXCTL = os.environ.get("INBOXCTL", "target/release/inboxctl")
ROWS = int(os.environ.get("ROWS", "1000000"))
BUSY_TIMEOUT = float(os.environ.get("BUSY_TIMEOUT", "5"))


def seed(path, rows):
    """ROWS rows, one a second, the newest a day ago; returns the cutoff (half older)."""
    newest = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    newest -= datetime.timedelta(days=1)
    first = newest - datetime.timedelta(seconds=rows - 1)
    db = sqlite3.connect(path)

    def row(n):
        at = first + datetime.timedelta(seconds=n)
        return (
            f"consumer-{n % 4}",
            f"e-{n}",
            "orders",
            n % 12,
            n // 12,
            at.strftime("%Y-%m-%d %H:%M:%S.000"),
        )

    db.executemany(
        "INSERT INTO processed_messages "
        "(consumer, event_id, topic, partition, \"offset\", processed_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (row(n) for n in range(rows)),
    )
    db.commit()
    db.close()
    return first + datetime.timedelta(seconds=rows // 2)


class Writer(threading.Thread):
    """Inserts a row every 5 ms; records (finished at, seconds taken, failed)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.done = threading.Event()
        self.inserts = []

    def run(self):
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        n = 0
        while not self.done.is_set():
            started = time.monotonic()
            failed = False
            try:
                db.execute(
                    "INSERT INTO processed_messages (consumer, event_id) VALUES (?, ?)",
                    ("app", f"app-{n}"),
                )
            except sqlite3.OperationalError:
                failed = True
            finished = time.monotonic()
            self.inserts.append((finished, finished - started, failed))
            n += 1
            time.sleep(0.005)
        db.close()


def describe(name, inserts):
    times = sorted(taken for _, taken, failed in inserts if not failed)
    failed = sum(1 for _, _, f in inserts if f)
    if not times:
        print(f"{name:>12}: no insert completed, {failed} failed")
        return
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(
        f"{name:>12}: {len(times):5d} inserts, median {statistics.median(times) * 1000:7.1f} ms, "
        f"p99 {p99 * 1000:7.1f} ms, longest {times[-1] * 1000:7.1f} ms, {failed} failed"
    )


def main():
    prune_args = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="inboxctl-bench-sqlite-") as folder:
        path = os.path.join(folder, "inbox.db")
        url = f"sqlite://{path}"
        subprocess.run([INBOXCTL, "-q", "migrate", "run", "--database-url", url], check=True)
        print(f"==> seeding {ROWS:,} rows")
        cutoff = seed(path, ROWS)
        writer = Writer(path)
        writer.start()
        time.sleep(3)
        started = time.monotonic()
        run = subprocess.run(
            [INBOXCTL, "prune", "--before", cutoff.strftime("%Y-%m-%dT%H:%M:%SZ"), "--yes",
             "--format", "json", "--database-url", url, *prune_args],
            capture_output=True, text=True, check=True,
        )
        ended = time.monotonic()
        time.sleep(1)
        writer.done.set()
        writer.join()
        report = json.loads(run.stdout)
        seconds = ended - started
        print(
            f"prune {' '.join(prune_args) or '(defaults)'}: {report['rows_deleted']:,} rows in "
            f"{report['batches']} batches, {seconds:.2f} s, {report['rows_deleted'] / seconds:,.0f} rows/s"
        )
        describe("alone", [i for i in writer.inserts if i[0] < started])
        # Every insert whose time overlapped prune's.
        describe("during prune", [i for i in writer.inserts if i[0] - i[1] < ended and i[0] > started])


if __name__ == "__main__":
    main()
