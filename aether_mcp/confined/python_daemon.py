"""Spark's Python daemon for processes that run agent code (`spark.python.daemon.module`).

Before the first Python worker forks, it installs the watch (so every worker inherits the audit
hook before any candidate loads), points the workers' home and temporary folder at the call's
scratch folder, and, in a confined process, stacks a Landlock domain on the process's own that
allows writes to that folder only, and imports the libraries every worker needs (see `_preload`).
Then it is PySpark's own daemon.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

CALL_SCRATCH_ENV = "AETHER_CALL_SCRATCH"


def main() -> None:
    from aether_mcp.confined import landlock, watch

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

    daemon.manager()


def _preload() -> None:
    """Import here, once, what every Python worker needs before it runs a candidate's batch.

    The candidate worker ends the daemon and its workers whenever the next request is for another
    candidate (so nothing a candidate leaves in a worker reaches another candidate's run); a fresh
    daemon that already holds these libraries keeps that restart, and each worker's start, short.
    No GPU library is imported: a CUDA context does not survive a fork.
    """
    import numpy  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    import pyspark.sql.pandas.serializers  # noqa: F401
    import pyspark.worker  # noqa: F401

    import aether_mcp.arrow_pandas  # noqa: F401
    import aether_mcp.confined.arrow_batches  # noqa: F401


if __name__ == "__main__":
    sys.exit(main())
