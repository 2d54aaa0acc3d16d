"""What a candidate's processes leave behind, ended before the next candidate is judged.

At a switch to another candidate the candidate worker stops Spark's Python worker factories, and
Spark ends each daemon, whose shutdown sends SIGHUP to its process group. A worker that ignores
SIGHUP and leaves the group (`os.setsid`), or a process it started that way, outlives that: the
watch does not see everything (a finalizer run by the harness's own `gc.collect()` has no candidate
frame on its stack), so such a process can exist, and it would still be running, with whatever it
holds, while the next candidate is judged.

The candidate worker is the first process of a PID namespace of its own (the confinement's
`unshare --pid --fork`), so every process started under it is in that namespace, and every orphan
among them becomes its child. `end_all_but` kills every process there but the ones named (the
worker itself and its JVM): an allow-list, so whatever a leftover process is or calls itself, it
ends. It also reaps the orphans that ended before (a daemon's workers, once their daemon is gone).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

QUIET_ROUNDS = 3  # rounds in a row that must find nothing alive
LONGEST_S = 2.0


def end_all_but(keep: set[int]) -> list[int]:
    """In a PID namespace this process is the first of, kill every process but `keep` and this one; the pids killed.

    Every process listed is killed at once, whatever its state says: a process whose main thread has ended reads as a
    zombie while its other threads run, and a process that forks and exits over and over has a new pid by the time a
    slower look would reach it. Rounds repeat until QUIET_ROUNDS in a row find nothing alive (no thread of any process
    but `keep` running), for at most LONGEST_S. Ended children of this process are reaped, but for those in `keep`:
    call it where no child of its own is still to be waited for by anyone else (the candidate worker calls it before a
    request runs). Elsewhere (no namespace of its own, so other processes here are not the worker's to end) nothing
    is done.
    """
    if os.getpid() != 1:
        return []
    keep = keep | {1}
    killed: set[int] = set()
    quiet, deadline = 0, time.monotonic() + LONGEST_S
    while quiet < QUIET_ROUNDS and time.monotonic() < deadline:
        found = [pid for pid in _processes() if pid not in keep]
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        quiet = quiet + 1 if not any(_alive(pid) for pid in found) else 0
        _reap(keep)
        time.sleep(0.001)
    _reap(keep)
    return sorted(killed)


def _alive(pid: int) -> bool:
    """Whether any thread of `pid` still runs (SIGKILL takes a moment to land)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(_state(pid, f"/task/{task}") not in ("Z", "X", "") for task in tasks)


def _reap(keep: set[int]) -> None:
    """The ended children of this process (the orphans it adopted among them), but those in `keep`."""
    for pid in _processes():
        if pid not in keep and _parent(pid) == 1 and _state(pid) == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _processes() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _stat(pid: int, task: str = "") -> list[str]:
    try:
        text = Path(f"/proc/{pid}{task}/stat").read_text()
    except OSError:
        return []
    return text[text.rindex(")") + 2 :].split()


def _state(pid: int, task: str = "") -> str:
    fields = _stat(pid, task)
    return fields[0] if fields else ""


def _parent(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if fields else -1
