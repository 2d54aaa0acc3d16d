"""Spark's Python daemon for the reference worker (`spark.python.daemon.module`): PySpark's own, with what each
worker it forks would do first done once, here.

The reference worker's tasks fork a Python worker from this daemon, and a worker whose UDF raised is not reused, so
an original that raises on some rows forks one for each of them. Each forked worker imported pyspark.worker (compiled
from the source in PySpark's zip archive, which Python caches no bytecode for) and, on its first task, put the
application's Spark files folder on sys.path and invalidated the import caches: about 0.1 CPU-s a worker, half of what
the reference's Python workers spent on an audit. Here the daemon imports pyspark.worker (with the code the server
compiled, where it is PySpark's own) and puts the folder on sys.path where the worker would, before it forks any
worker (see evaluation/daemon_start); the original then runs in a worker with the modules and the sys.path a job's
worker has, and nothing else is loaded.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    prepare()
    from pyspark import daemon

    daemon.manager()


def prepare() -> None:
    """What every forked worker would do first, done once: pyspark.worker imported, the Spark files folder on sys.path."""
    from aether_mcp.evaluation import daemon_start
    from aether_mcp.evaluation.spark_session import ZIP_CODE_ENV

    files = os.environ.pop(daemon_start.SPARK_FILES_ENV, None)
    with daemon_start.compiled_from(os.environ.get(ZIP_CODE_ENV)):
        import pyspark.daemon  # noqa: F401
        import pyspark.worker  # noqa: F401
    daemon_start.files_folder_on_path(files)
    if sys.argv and sys.argv[0] == __file__:  # started as `python -m` by Spark: named as a job's daemon is
        daemon_start.as_pysparks_daemon("aether_mcp.reference.reference_daemon")


if __name__ == "__main__":
    sys.exit(main())
