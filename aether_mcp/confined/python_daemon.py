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
collected. A candidate cannot see the freeze: `gc` is off the import allow-list. The benchmark and
validation applications leave it unset, so that their timings include what a job's workers do.
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
    daemon.manager()


def _compiled_from(path: str | None):
    """While the libraries load: modules PySpark's zip archives hold get their code from `path`, made by the server.

    Python caches no bytecode for modules it imports from a zip archive, so every fresh daemon compiled PySpark's and
    py4j's modules from source (about half of its start). The server compiles them once per Python and Spark
    (processes/zip_code_cache) into a file confined processes may read and none may write; each module's code is
    used only where the source in the archive is the one it was compiled from, else compiled as before. Code is the
    same either way, and zipimport is given back its own compiler before any candidate loads.
    """
    import contextlib
    import hashlib
    import marshal
    import stat
    import zipimport

    table: dict = {}
    if path:
        try:
            with open(path, "rb") as file:
                opened = os.fstat(file.fileno())  # made read-only by this user; changed since: not used
                if not stat.S_ISREG(opened.st_mode) or opened.st_mode & 0o022 or opened.st_uid != os.getuid():
                    raise ValueError(path)
                found = marshal.load(file)
            if found.get("python") == sys.version and found.get("optimize") == sys.flags.optimize:
                table = found["modules"]
        except (OSError, EOFError, ValueError, TypeError, KeyError, AttributeError):
            table = {}
    original = getattr(zipimport, "_compile_source", None)
    if not table or original is None:
        return contextlib.nullcontext()

    def compiled(pathname, source):
        entry = table.get(pathname)
        if entry is not None and entry[0] == hashlib.sha256(source).digest():
            return marshal.loads(entry[1])
        return original(pathname, source)

    @contextlib.contextmanager
    def patched():
        zipimport._compile_source = compiled
        try:
            yield
        finally:
            zipimport._compile_source = original

    return patched()


def _preload() -> None:
    """Import here, once, what every Python worker needs before it runs a candidate's batch.

    The candidate worker ends the daemon and its workers whenever the next request is for another
    candidate (so nothing a candidate leaves in a worker reaches another candidate's run); a fresh
    daemon that already holds these libraries keeps that restart, and each worker's start, short.
    No GPU library is imported: a CUDA context does not survive a fork.
    """
    from aether_mcp.evaluation.spark_session import ZIP_CODE_ENV

    # judging only (see GC_FREEZE_ENV): a benchmark's daemons start as a job's do
    with _compiled_from(os.environ.get(ZIP_CODE_ENV) if os.environ.get(GC_FREEZE_ENV) == "1" else None):
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
