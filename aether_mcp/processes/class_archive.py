"""A class-data-sharing archive of Spark's classes, so that each Spark JVM the server starts maps them instead of loading them.

Every worker, benchmark application, validation run and job-style build starts a JVM that loads
and verifies several thousand classes from Spark's jars. With Java's class-data sharing they are
mapped from one archive instead: a local SparkSession came up in 2.2 s instead of 4.2 s and ran its
first query in 0.85 s instead of 2.1 s, on 2 cores (see docs/development.md).

The archive is made once per Java and Spark installation, in the background, by a process of the
server's own that runs no agent code (evaluation/class_archive_workload), and kept in the user's
cache folder (`$XDG_CACHE_HOME/aether-mcp/jvm`, else `~/.cache/aether-mcp/jvm`), where no confined
process can write. Once it exists, its path is in the environment variable CLASS_ARCHIVE_ENV, which
every child inherits and create_session reads; confined processes may read that one file. A JVM that finds the archive does not match it
(another Java, another class path) says so in its log and starts as it would without one. JVMs
started before the archive is made run without it. AETHER_MCP_CLASS_ARCHIVE=0 turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path

from aether_mcp.evaluation.spark_session import CLASS_ARCHIVE_ENV
from aether_mcp.processes import subprocess_runner
from aether_mcp.processes.made_once import MadeOnce

SWITCH_ENV = "AETHER_MCP_CLASS_ARCHIVE"
MAKE_TIMEOUT_S = 300
KEEP_ARCHIVES = 3


@functools.lru_cache(maxsize=1)
def key() -> str | None:
    """What the archive depends on: this Java (its launcher and its JVM library) and Spark's jars; None without either."""
    from aether_mcp.processes.java_runtime import find_java

    java = find_java(subprocess_runner.child_env())
    found = importlib.util.find_spec("pyspark")  # located, not imported: the server starts without pyspark
    if java is None or found is None or not found.submodule_search_locations:
        return None
    jars = Path(list(found.submodule_search_locations)[0]) / "jars"
    if not jars.is_dir():
        return None
    binary = Path(java).resolve()
    stamp = lambda path: f"{path}:{path.stat().st_size}:{path.stat().st_mtime_ns}"  # noqa: E731
    parts = [stamp(binary), str(jars), sys.version.split()[0]]
    parts += [stamp(library) for library in sorted(binary.parents[1].glob("lib/server/libjvm.*"))]
    parts += sorted(stamp(jar) for jar in jars.glob("*.jar"))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


# the workload's JVM writes the archive at its exit (evaluation/class_archive_workload)
_ARCHIVE = MadeOnce(
    CLASS_ARCHIVE_ENV, "jvm", "spark", ".jsa", lambda: key(),
    lambda partial: [sys.executable, "-I", "-B", "-m", "aether_mcp.evaluation.class_archive_workload", str(partial)],
    lambda: {"SPARK_LOCAL_IP": "127.0.0.1", "PYARROW_IGNORE_TIMEZONE": "1"}, MAKE_TIMEOUT_S, KEEP_ARCHIVES,
)  # fmt: skip
folder = _ARCHIVE.folder
valid = _ARCHIVE.valid


def ensure() -> threading.Thread | None:
    """Point JVMs started from now on at the archive; start making it in the background when there is none.

    Cheap once the archive exists (called before every worker starts). Returns the thread making it, if this
    process is making it; one process on the machine makes it at a time (the others go on without it).
    Never raises: without an archive, JVMs only start more slowly. SWITCH_ENV=0 turns it off."""
    return _ARCHIVE.ensure(off=os.environ.get(SWITCH_ENV) == "0")
