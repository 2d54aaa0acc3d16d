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

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import os
import re
import sys
import threading
import time
from pathlib import Path

from aether_mcp.evaluation.spark_session import CLASS_ARCHIVE_ENV
from aether_mcp.processes import subprocess_runner

SWITCH_ENV = "AETHER_MCP_CLASS_ARCHIVE"
MAKE_TIMEOUT_S = 300
KEEP_ARCHIVES = 3
RETRY_AFTER_FAILURE_S = 86_400  # a make that failed is not tried again for a day (its log says why)
NAME = re.compile(r"spark-[0-9a-f]{16}\.jsa")

_lock = threading.Lock()
_making: threading.Thread | None = None
_inherited_dropped = False


def folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aether-mcp" / "jvm"


def valid(path: str | None) -> bool:
    """Whether `path` is an archive this server made: a file named like one, in folder(), with no whitespace (Spark splits JVM options at it)."""
    if not path or any(c.isspace() for c in path):
        return False
    try:
        real = Path(os.path.realpath(path))
        return NAME.fullmatch(real.name) is not None and real.parent == Path(os.path.realpath(folder())) and real.is_file()
    except OSError:
        return False


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


def ensure() -> threading.Thread | None:
    """Point JVMs started from now on at the archive; start making it in the background when there is none.

    Cheap once the archive exists (called before every worker starts). Returns the thread making it, if this
    process is making it; one process on the machine makes it at a time (the others go on without it).
    Never raises: without an archive, JVMs only start more slowly."""
    global _making, _inherited_dropped
    if not _inherited_dropped:  # a value the server inherited (from a server that started it, say) is not its own
        os.environ.pop(CLASS_ARCHIVE_ENV, None)
        _inherited_dropped = True
    if os.environ.get(SWITCH_ENV) == "0":
        os.environ.pop(CLASS_ARCHIVE_ENV, None)
        return None
    try:
        found = key()
        if found is None:
            return None
        target = folder() / f"spark-{found}.jsa"
        if valid(str(target)):
            with contextlib.suppress(OSError):
                os.utime(target)  # used: the newest are the ones kept (KEEP_ARCHIVES)
            os.environ[CLASS_ARCHIVE_ENV] = str(target)
            return None
        failed = target.with_suffix(".failed")
        if failed.is_file() and time.time() - failed.stat().st_mtime < RETRY_AFTER_FAILURE_S:
            return None
    except OSError:
        return None
    with _lock:
        if _making is None or not _making.is_alive():
            _making = threading.Thread(target=_make, args=(target,), name="class-archive", daemon=True)
            _making.start()
        return _making


def _make(target: Path) -> None:
    """Run the workload with the archive written at its JVM's exit; keep it only if the run ended well.

    The next ensure() (before the next worker starts) points JVMs at it."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(target.parent / "make.lock", "a+b") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # another process is making one; a later ensure() finds it
            for stale in target.parent.glob(".spark-*.partial"):  # left by a process that ended while making one
                stale.unlink(missing_ok=True)
            if target.is_file():
                return
            partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
            argv = [sys.executable, "-I", "-B", "-m", "aether_mcp.evaluation.class_archive_workload", str(partial)]
            try:
                ended = subprocess_runner.run(
                    argv, cwd=target.parent, log_path=target.with_suffix(".log"), timeout_s=MAKE_TIMEOUT_S, env_extra={"SPARK_LOCAL_IP": "127.0.0.1", "PYARROW_IGNORE_TIMEZONE": "1"}
                )
                if ended.returncode == 0 and partial.is_file() and partial.stat().st_size > 0:
                    os.chmod(partial, 0o444)
                    os.replace(partial, target)
                    _prune(target.parent)
                else:
                    target.with_suffix(".failed").write_text(f"exit {ended.returncode}; see {target.with_suffix('.log')}\n", encoding="utf-8")
            finally:
                partial.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - no archive is only slower; its log says why
        with contextlib.suppress(OSError):
            target.with_suffix(".failed").write_text("the make failed before or after its run\n", encoding="utf-8")


def _prune(where: Path) -> None:
    """Keep the KEEP_ARCHIVES archives used last (each installation has its own, about 190 MB), with their logs."""
    archives = sorted(where.glob("spark-*.jsa"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old in archives[KEEP_ARCHIVES:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".log").unlink(missing_ok=True)
        old.with_suffix(".failed").unlink(missing_ok=True)
