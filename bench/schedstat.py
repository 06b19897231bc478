#!/usr/bin/env python3
"""Where a PostgreSQL server's processes and its clients spend a window of time.

usage: bench/schedstat.py URL OUT

Creates OUT.ready once it is sampling; from then on SIGTERM or SIGINT ends it.

Until SIGTERM or SIGINT, samples /proc/PID/schedstat every 10 ms for every `postgres`,
`pgbench`, `psql` and `inboxctl` process on this machine. Then writes one line per kind
of process to OUT: CPU time, time spent runnable but waiting for a CPU (the run queue),
how many times it was scheduled, and the mean wait per scheduling.

A server process is named by its application_name (its backend_type when it has none),
asked of pg_stat_activity on URL only when a new server process appears, so that the probe
itself adds little to the CPUs it measures. The server must run on this machine. A process
is counted from the first sample that sees it, so the first few milliseconds of one are
missed; the figures are for comparing windows with each other.
"""
import os
import signal
import subprocess
import sys
import time

PROGRAMS = ("postgres", "pgbench", "psql", "inboxctl")
LIST = (
    "SELECT pid, coalesce(nullif(application_name, ''), backend_type) "
    "FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
)


def parent(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def main():
    url, out = sys.argv[1], sys.argv[2]
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # Tells whoever started the probe that a signal from now on ends it with its figures.
    open(f"{out}.ready", "w").close()

    program = {}  # pid -> comm, for every process of PROGRAMS seen
    ignored = set()  # pids of other programs
    label = {}  # server pid -> application_name or backend_type
    first, last = {}, {}  # pid -> (cpu_ns, wait_ns, scheduled)
    while not stopping:
        unnamed = False
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            if pid in ignored:
                continue
            if pid not in program:
                try:
                    with open(f"/proc/{pid}/comm") as f:
                        comm = f.read().strip()
                except OSError:
                    continue
                # A build copied elsewhere keeps its prefix (inboxctl-base, say).
                comm = next((p for p in PROGRAMS if comm.startswith(p)), None)
                if comm is None or parent(pid) == os.getpid():
                    ignored.add(pid)  # another program, or this probe's own psql
                    continue
                program[pid] = comm
            try:
                with open(f"/proc/{pid}/schedstat") as f:
                    sample = tuple(int(v) for v in f.read().split())
            except OSError:
                continue
            first.setdefault(pid, sample)
            last[pid] = sample
            unnamed |= program[pid] == "postgres" and pid not in label
        if unnamed:
            listing = subprocess.run(
                ["psql", url, "-XAtF", "\t", "-c", LIST],
                capture_output=True, text=True, check=True,
            ).stdout
            for line in listing.splitlines():
                pid, name = line.split("\t", 1)
                label[int(pid)] = name
            # The postmaster and processes gone before the listing stay unnamed; do not ask
            # again for them.
            for pid, comm in program.items():
                if comm == "postgres":
                    label.setdefault(pid, "postgres (other)")
        time.sleep(0.01)

    totals = {}
    for pid, sample in last.items():
        if program[pid] == "postgres":
            name = f"server: {label.get(pid, 'postgres (other)')}"
        else:
            name = f"client: {program[pid]}"
        total = totals.setdefault(name, [0, 0, 0])
        for i in range(3):
            total[i] += sample[i] - first[pid][i]
    with open(out, "w") as f:
        for name, (cpu, wait, scheduled) in sorted(totals.items()):
            if scheduled == 0:
                continue
            f.write(
                f"{name:<28} cpu {cpu / 1e6:7.1f} ms  run-queue wait {wait / 1e6:6.1f} ms"
                f"  scheduled {scheduled:6d}x  ({wait / scheduled / 1000:5.1f} us each)\n"
            )


if __name__ == "__main__":
    main()
