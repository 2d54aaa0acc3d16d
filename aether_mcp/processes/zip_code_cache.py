"""PySpark's zipped modules, compiled once, for the judge's Python daemons.

Spark starts its Python workers with PySpark's zip archives first on their path, and Python caches
no bytecode for modules it imports from a zip archive: each fresh daemon compiled the hundred-odd
modules it loads from source, about 0.5 of its 1 CPU-second start (see docs/development.md), and the
candidate worker starts a fresh daemon for every candidate. The code they compile to is made here
once per Python and PySpark installation, in the background, by a process of the server's own that
runs no agent code (evaluation/zip_code_workload), and kept in the user's cache folder
(`$XDG_CACHE_HOME/aether-mcp/python`, else `~/.cache/aether-mcp/python`), where no confined process
can write. Once it exists its path is in ZIP_CODE_ENV, which every child inherits; confined processes
may read that one file, and a judging daemon loads its modules' code from it (confined/python_daemon),
each only where the archive's source is the one it was compiled from. Daemons started before it is
made, or by benchmark applications, compile as before.
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

from aether_mcp.evaluation.spark_session import ZIP_CODE_ENV
from aether_mcp.processes import class_archive, subprocess_runner

MAKE_TIMEOUT_S = 120
MAKE_WAIT_S = 20  # how long a candidate worker's start waits for a make under way (about 1.5 s here)
KEEP = 3
RETRY_AFTER_FAILURE_S = 86_400  # a make that failed is not tried again for a day (its log says why)
NAME = re.compile(r"pyspark-[0-9a-f]{16}\.code")

_lock = threading.Lock()
_making: threading.Thread | None = None
_inherited_dropped = False


def folder() -> Path:
    return class_archive.folder().parent / "python"


def valid(path: str | None) -> bool:
    """Whether `path` is a file this server made: named like one, in folder()."""
    if not path:
        return False
    try:
        real = Path(os.path.realpath(path))
        return NAME.fullmatch(real.name) is not None and real.parent == Path(os.path.realpath(folder())) and real.is_file()
    except OSError:
        return False


def archives() -> list[Path]:
    """PySpark's zip archives, as Spark puts them on its Python workers' path (pyspark.zip, then py4j's)."""
    found = importlib.util.find_spec("pyspark")  # located, not imported
    if found is None or not found.submodule_search_locations:
        return []
    lib = Path(list(found.submodule_search_locations)[0]) / "python" / "lib"
    return [path for path in [lib / "pyspark.zip", *sorted(lib.glob("py4j-*-src.zip"))] if path.is_file()]


@functools.lru_cache(maxsize=1)
def key() -> str | None:
    """What the compiled code depends on: this Python and PySpark's archives; None without them."""
    zips = archives()
    if not zips:
        return None
    stamps = [f"{path}:{path.stat().st_size}:{path.stat().st_mtime_ns}" for path in zips]
    return hashlib.sha256("\n".join([sys.version, sys.executable, *stamps]).encode()).hexdigest()[:16]


def ensure(wait_s: float = 0.0) -> threading.Thread | None:
    """Point processes started from now on at the compiled code; start making it in the background when there is none.

    Cheap once it exists. `wait_s`: wait that long for a make under way, then point at what it made. Returns the
    thread making it, if this process is making it. Never raises: without it, daemons only start more slowly."""
    global _making, _inherited_dropped
    if not _inherited_dropped:  # a value the server inherited is not its own
        os.environ.pop(ZIP_CODE_ENV, None)
        _inherited_dropped = True
    try:
        found = key()
        if found is None:
            return None
        target = folder() / f"pyspark-{found}.code"
        if valid(str(target)):
            with contextlib.suppress(OSError):
                os.utime(target)  # used: the newest are the ones kept
            os.environ[ZIP_CODE_ENV] = str(target)
            return None
        failed = target.with_suffix(".failed")
        if failed.is_file() and time.time() - failed.stat().st_mtime < RETRY_AFTER_FAILURE_S:
            return None
    except OSError:
        return None
    with _lock:
        if _making is None or not _making.is_alive():
            _making = threading.Thread(target=_make, args=(target,), name="zip-code", daemon=True)
            _making.start()
        making = _making
    if wait_s > 0:
        making.join(wait_s)
        if valid(str(target)):
            os.environ[ZIP_CODE_ENV] = str(target)
    return making


def _make(target: Path) -> None:
    """Run the workload with PySpark's archives on its path; keep what it wrote only if it ended well."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(target.parent / "make.lock", "a+b") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return  # another process is making it; a later ensure() finds it
            if target.is_file():
                return
            partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
            # as Spark starts a daemon: no -I, the archives on PYTHONPATH
            argv = [sys.executable, "-B", "-m", "aether_mcp.evaluation.zip_code_workload", str(partial)]
            try:
                ended = subprocess_runner.run(
                    argv, cwd=target.parent, log_path=target.with_suffix(".log"), timeout_s=MAKE_TIMEOUT_S, env_extra={"PYTHONPATH": os.pathsep.join(map(str, archives()))}
                )
                if ended.returncode == 0 and partial.is_file() and partial.stat().st_size > 0:
                    os.chmod(partial, 0o444)
                    os.replace(partial, target)
                    _prune(target.parent)
                else:
                    target.with_suffix(".failed").write_text(f"exit {ended.returncode}; see {target.with_suffix('.log')}\n", encoding="utf-8")
            finally:
                partial.unlink(missing_ok=True)
    except Exception:  # noqa: BLE001 - no compiled code is only slower; its log says why
        with contextlib.suppress(OSError):
            target.with_suffix(".failed").write_text("the make failed before or after its run\n", encoding="utf-8")


def _prune(where: Path) -> None:
    for old in sorted(where.glob("pyspark-*.code"), key=lambda path: path.stat().st_mtime, reverse=True)[KEEP:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".log").unlink(missing_ok=True)
        old.with_suffix(".failed").unlink(missing_ok=True)
