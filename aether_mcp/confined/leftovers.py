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

ROUNDS = 20


def end_all_but(keep: set[int]) -> list[int]:
    """In a PID namespace this process is the first of, kill every process but `keep` and this one; the pids killed.

    Rounds repeat while new ones appear (a process forking as it is killed). Ended children of this process are reaped,
    but for those in `keep`: call it where no child of its own is still to be waited for by anyone else (the candidate
    worker calls it before a request runs). Elsewhere (no namespace of its own, so other processes here are not the
    worker's to end) nothing is done.
    """
    if os.getpid() != 1:
        return []
    keep = keep | {1}
    killed: list[int] = []
    for _ in range(ROUNDS):
        found = [pid for pid in _processes() if pid not in keep and _state(pid) not in ("Z", "X", "")]
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except OSError:
                pass
        time.sleep(0.005)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(_state(pid) not in ("Z", "X", "") for pid in killed):
        time.sleep(0.01)
    for pid in _processes():  # orphans this process adopted, ended by now
        if pid not in keep and _state(pid) == "Z" and _parent(pid) == 1:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
    return killed


def _processes() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _stat(pid: int) -> list[str]:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text[text.rindex(")") + 2 :].split()


def _state(pid: int) -> str:
    fields = _stat(pid)
    return fields[0] if fields else ""


def _parent(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[1]) if fields else -1
