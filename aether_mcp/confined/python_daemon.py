"""Spark's Python daemon for processes that run agent code (`spark.python.daemon.module`).

Before the first Python worker forks, it installs the watch (so every worker inherits the audit
hook before any candidate loads), points the workers' home and temporary folder at the call's
scratch folder, and, in a confined process, stacks a Landlock domain on the process's own that
allows writes to that folder only, and imports the libraries every worker needs (see `_preload`).
Then it is PySpark's own daemon.

Where the process judges (the candidate worker sets AETHER_DAEMON_GC_FREEZE=1 for its Python
workers), what the daemon holds by then is moved out of the cyclic garbage collector's reach
(`gc.freeze`) before any worker forks. PySpark's reused workers run `gc.collect()` after every
task, and with NumPy, pandas and PyArrow loaded each walked about 74,000 objects (14 ms on an idle
core, about 95 ms with both cores busy), once per partition; objects a candidate makes are still
collected. A candidate cannot see the freeze: `gc` is off the import allow-list. There too the daemon puts the
application's Spark files folder on sys.path where each worker's first task would, so that no worker invalidates
the import caches (evaluation/daemon_start); the workers' sys.path is a job's. The benchmark and validation
applications leave it unset, so that their timings include what a job's workers do.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

CALL_SCRATCH_ENV = "AETHER_CALL_SCRATCH"
GC_FREEZE_ENV = "AETHER_DAEMON_GC_FREEZE"


def main() -> None:
    from aether_mcp.confined import landlock, watch
    from aether_mcp.evaluation import daemon_start

    files = os.environ.pop(daemon_start.SPARK_FILES_ENV, None)
    watch.install()
    call = os.environ.get(CALL_SCRATCH_ENV)
    if call and os.path.isdir(call):
        os.environ["TMPDIR"] = os.environ["HOME"] = call
        tempfile.tempdir = None
        if os.environ.get("AETHER_CONFINED") == "1":
            devices = [str(p) for p in Path("/dev").glob("nvidia*")]
            # Reads stay as the process's own domain allows; writes narrow to the call's scratch.
            landlock.restrict(["/"], [call, "/dev/null", "/dev/zero", *devices])
    _preload()
    from pyspark import daemon

    _freeze_where_judging()
    if os.environ.get(GC_FREEZE_ENV) == "1":  # judging only: a benchmark's workers start as a job's do
        daemon_start.files_folder_on_path(files)
    daemon.manager()


def _preload() -> None:
    """Import here, once, what every Python worker needs before it runs a candidate's batch.

    The candidate worker ends the daemon and its workers whenever the next request is for another
    candidate (so nothing a candidate leaves in a worker reaches another candidate's run); a fresh
    daemon that already holds these libraries keeps that restart, and each worker's start, short.
    No GPU library is imported: a CUDA context does not survive a fork.
    """
    from aether_mcp.evaluation.daemon_start import compiled_from
    from aether_mcp.evaluation.spark_session import ZIP_CODE_ENV

    # judging only (see GC_FREEZE_ENV): a benchmark's daemons start as a job's do
    with compiled_from(os.environ.get(ZIP_CODE_ENV) if os.environ.get(GC_FREEZE_ENV) == "1" else None):
        import numpy  # noqa: F401
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
        import pyspark.daemon  # noqa: F401
        import pyspark.sql.pandas.serializers  # noqa: F401
        import pyspark.worker  # noqa: F401

        import aether_mcp.arrow_pandas  # noqa: F401
        import aether_mcp.confined.arrow_batches  # noqa: F401


def _freeze_where_judging() -> None:
    """Where the process judges, keep what the daemon holds now out of every forked worker's gc.collect()."""
    if os.environ.get(GC_FREEZE_ENV) == "1":
        import gc

        gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
