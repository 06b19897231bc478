#!/usr/bin/env python3
"""Keeps one role's PostgreSQL backends on one CPU.

usage: bench/pin.py POSTMASTER_PID ROLE CPU READY

Every 0.5 ms, reads the postmaster's children (/proc/PID/task/PID/children) and moves each
new one whose process title names ROLE as its user to CPU (sched_setaffinity). Creates
READY once it is watching; SIGTERM or SIGINT ends it. The other children are left where
the postmaster's own affinity puts them.

bench/prune.sh runs it with PIN=1, so that the inserter's backends run on the inserter's
CPU from their first statement although each pgbench run connects anew. A backend's title
names its user from the moment it has read the startup packet, before it authenticates,
so a backend is moved before it runs anything.
"""
import os
import signal
import sys
import time


def title(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def main():
    postmaster, role, cpu, ready = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    children = f"/proc/{postmaster}/task/{postmaster}/children"
    # "postgres: [cluster: ]ROLE DB HOST(PORT) ACTIVITY": the user follows "postgres: " or
    # the cluster name's ": ".
    marks = (f"postgres: {role} ", f": {role} ")
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A child shows the postmaster's command line until it sets its own title; it is looked
    # at again until it has, and settled either way after.
    settled = set()
    open(ready, "w").close()
    while not stopping:
        try:
            with open(children) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            sys.exit(f"bench/pin.py: cannot read {children}")
        for pid in pids:
            if pid in settled:
                continue
            name = title(pid)
            if not name.startswith("postgres: "):
                continue
            if any(mark in name for mark in marks):
                try:
                    os.sched_setaffinity(pid, {cpu})
                except ProcessLookupError:
                    pass
            settled.add(pid)
        settled &= set(pids)
        time.sleep(0.0005)


if __name__ == "__main__":
    main()
