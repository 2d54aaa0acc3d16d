"""What both judging workers' Python daemons do once, before their first worker forks, that each forked worker would
otherwise do again: the same modules and the same sys.path as a job's workers end up with, at a fraction of the CPU.

Used by confined/python_daemon (the candidate worker's daemons, where it judges) and reference/reference_daemon (the
reference worker's); the benchmark and validation applications' daemons start as a job's do.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

# The application's Spark files folder (SparkFiles.getRootDirectory()): the worker sets it in its SparkContext's
# environment once its SparkSession exists (tell_daemons), Spark starts the daemon with it, and the daemon takes it out
# of its environment before any worker forks.
SPARK_FILES_ENV = "AETHER_SPARK_FILES"


def local_master(master: str) -> bool:
    """Whether Spark runs the executors in the driver's process (`local`, `local[N]`), where they share its files folder."""
    return master == "local" or master.startswith("local[")


def tell_daemons(spark: Any, master: str) -> None:
    """Give the daemons Spark starts from now on the application's Spark files folder (see files_folder_on_path).

    Only where the workers are given that same folder: executors of another master use a folder of their own, and with
    per-session artifact folders each session's tasks name a folder under it.
    """
    if not local_master(master) or str(spark.conf.get("spark.sql.artifact.isolation.enabled", "false")).lower() == "true":
        return
    context = spark.sparkContext
    context.environment[SPARK_FILES_ENV] = context._jvm.org.apache.spark.SparkFiles.getRootDirectory()


def files_folder_on_path(folder: str | None) -> None:
    """Put the Spark files folder on sys.path as each worker's first task would, once, here.

    A worker's first task puts that folder at sys.path[1] (pyspark.worker_util.add_path) and, since the path changed,
    calls importlib.invalidate_caches(). That re-reads the directory of PySpark's zip archive once per package imported
    from it: about 60 ms of CPU in every worker a daemon forks, and a worker whose UDF raised is not reused. With the
    folder already there, in the same place, the worker adds nothing and invalidates nothing, and its sys.path is the
    one a job's worker ends up with. Only a folder Spark made for this user is put there (an existing directory this
    user owns, that no group or other user may write); anything else is left to the worker, as in a job.
    """
    if not folder or folder in sys.path:
        return
    try:
        found = os.stat(folder)
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o022:
        sys.path.insert(1, folder)


def as_pysparks_daemon(module: str) -> None:
    """Name the running script as `python -m pyspark.daemon` names it (sys.argv, sys.orig_argv), not as `module`."""
    from pyspark import daemon

    sys.argv[0] = daemon.__file__
    started = getattr(sys, "orig_argv", [])  # the interpreter's own command line, as `python -m` was given it
    for index, part in enumerate(started):
        if part == module:
            started[index] = "pyspark.daemon"


def compiled_from(path: str | None):
    """While the libraries load: modules PySpark's zip archives hold get their code from `path`, made by the server.

    Python caches no bytecode for modules it imports from a zip archive, so every fresh daemon compiled PySpark's and
    py4j's modules from source (about half of its start). The server compiles them once per Python and Spark
    (processes/zip_code_cache) into a file confined processes may read and none may write; each module's code is
    used only where the source in the archive is the one it was compiled from, else compiled as before. Code is the
    same either way, and zipimport is given back its own compiler when the block ends (before any candidate loads).
    """
    import contextlib
    import hashlib
    import marshal
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
