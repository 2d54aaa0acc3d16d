"""The environment agent code sees when it loads: what a job's executors have, nothing that names the harness.

A candidate that can tell a judged run from the job can be right only when judged. Before the
first candidate loads in a process (a Spark Python worker, the process that runs a sql `build()`, a
benchmark child), `as_in_a_job()` settles what the harness itself still needs from its variables
(the backend), then removes every `AETHER_*` variable, and names the process's script as PySpark's
own daemon names it (in `sys.argv` and `sys.orig_argv`; the kernel's copies under /proc, like
every other part of the process layout there and under /sys, are refused to agent code by the
watch). The folders a confined process works in are plain temporary folders (see
aether_mcp.processes.confinement.Scratch), so no path names the harness either.
"""

from __future__ import annotations

import os
import sys

PREFIX = "AETHER_"
_done = [False]


def as_in_a_job() -> None:
    """Remove the harness's variables from this process's environment (once; later calls do nothing)."""
    if _done[0]:
        return
    _done[0] = True
    from aether_mcp import backend

    backend.settle()
    for name in [name for name in os.environ if name.startswith(PREFIX)]:
        del os.environ[name]
    if sys.argv and sys.argv[0].endswith(os.path.join("confined", "python_daemon.py")):
        from aether_mcp.evaluation import daemon_start

        daemon_start.as_pysparks_daemon("aether_mcp.confined.python_daemon")
