"""What `make test` costs on this machine, and the least it could cost with the work it does now.

Runs the suite as `make test` does (two pytest-xdist workers, `--durations=0`) and reads the machine's
CPU counters (/proc/stat) every second while it runs. Prints the wall time, the test time per file
(setup, call and teardown, summed over both workers), the CPU-seconds the whole machine spent busy
(time the hypervisor took away not counted), the share of one-second samples in which the machine was
under 90% busy, and the floor: busy CPU-seconds over the cores, the
wall time no scheduling of the same work can beat. When the floor is near the wall, the suite is
bound by its CPU work, and only less work (not more workers) makes it faster. Run it on a quiet
machine; anything else running counts as the suite's.

    .venv/bin/python benchmarks/suite_time.py                  # the whole suite, as make test runs it
    .venv/bin/python benchmarks/suite_time.py tests/test_red_team.py
    .venv/bin/python benchmarks/suite_time.py --log run.log    # a log of an earlier run with --durations=0: per-file time only
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DURATION = re.compile(r"(?:^|\s)([0-9.]+)s (call|setup|teardown)\s+(\S+?)::")  # a line may carry a prefix (a timestamp)
SUMMARY = re.compile(r"=+ (.*\d+ passed.*) in ([0-9.]+)s")


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies over all cores since boot: busy is user, nice, system, irq and softirq; iowait counts as
    idle, and steal (time the hypervisor gave to others) is left out of both."""
    user, nice, system, idle, iowait, irq, softirq = (int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:8])
    busy = user + nice + system + irq + softirq
    return busy, busy + idle + iowait


class CpuWatch:
    """Busy CPU-seconds of the whole machine between start and stop, and the share of one-second samples with a core idle."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuWatch:
        self.first = _cpu_ticks()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.last = _cpu_ticks()

    def _run(self) -> None:
        before = _cpu_ticks()
        while not self._stop.wait(1.0):
            now = _cpu_ticks()
            busy, total = now[0] - before[0], now[1] - before[1]
            if total:
                self.samples.append(busy / total)
            before = now

    @property
    def busy_s(self) -> float:
        return (self.last[0] - self.first[0]) / os.sysconf("SC_CLK_TCK")

    @property
    def idle_share(self) -> float:
        """Share of samples in which under 90% of the machine's CPU time was busy."""
        return sum(1 for s in self.samples if s < 0.9) / len(self.samples) if self.samples else 0.0


def per_file(lines: list[str]) -> tuple[collections.Counter, collections.Counter]:
    """Test time (setup, call and teardown) and the number of tests called, per test file, from `--durations=0` lines."""
    spent: collections.Counter = collections.Counter()
    called: collections.Counter = collections.Counter()
    for line in lines:
        found = DURATION.search(line)
        if found:
            spent[found.group(3)] += float(found.group(1))
            called[found.group(3)] += found.group(2) == "call"
    return spent, called


def report(lines: list[str], top: int) -> bool:
    """Print the test time per file and pytest's summary; False when `lines` hold no `--durations` lines."""
    spent, called = per_file(lines)
    if not spent:
        print("no --durations lines found: run pytest with --durations=0 (this script does), or give the log of such a run")
        return False
    print(f"test time {sum(spent.values()):,.0f} s in {len(spent)} files (pytest lists no phase under 5 ms); the slowest files, with their tests listed:")
    for file, seconds in spent.most_common(top):
        print(f"  {seconds:7.1f} s  {called[file]:4d} tests  {file}")
    summary = next((m for m in map(SUMMARY.search, lines) if m), None)
    if summary:
        print(f"pytest: {summary.group(1)} in {float(summary.group(2)):,.0f} s")
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="test files or folders (default: the whole suite)")
    parser.add_argument("--log", help="read this log of an earlier run instead of running the suite")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (make test uses 2)")
    parser.add_argument("--top", type=int, default=15, help="how many files to list")
    args = parser.parse_args()
    if args.log:
        if not report(Path(args.log).read_text(encoding="utf-8", errors="replace").splitlines(), args.top):
            sys.exit(1)
        return
    if not Path("/proc/stat").is_file():
        sys.exit("this needs Linux's /proc/stat to read the machine's CPU time; give --log to read an earlier run instead")
    command = [sys.executable, "-m", "pytest", "-n", str(args.workers), "--dist", "worksteal", "--durations=0", "-q", "-p", "no:cacheprovider", *args.paths]
    print("running:", " ".join(command), flush=True)
    started = time.monotonic()
    with CpuWatch() as cpu:
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - started
    lines = (done.stdout + done.stderr).splitlines()
    report(lines, args.top)
    cores = os.cpu_count() or 1
    print(f"wall {wall:,.0f} s; the machine busy for {cpu.busy_s:,.0f} CPU-s on {cores} cores ({cpu.busy_s / (wall * cores):.0%} of what it had)")
    print(f"floor: {cpu.busy_s / cores:,.0f} s, the least wall time this much CPU work takes on {cores} cores; {cpu.idle_share:.0%} of one-second samples were under 90% busy")
    if done.returncode != 0:
        print("\n".join(lines[-30:]))
        sys.exit(f"pytest exited {done.returncode}: the times above are of a failing run")


if __name__ == "__main__":
    main()
