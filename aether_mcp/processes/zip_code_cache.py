"""PySpark's zipped modules, compiled once, for the judge's Python daemons.

Spark starts its Python workers with PySpark's zip archives first on their path, and Python caches
no bytecode for modules it imports from a zip archive: each fresh daemon compiled the hundred-odd
modules it loads from source, about 0.5 of its 1 CPU-second start (see docs/development.md), and the
candidate worker starts a fresh daemon for every candidate. The code they compile to is made here
once per Python and PySpark installation, in the background, by a process of the server's own that
runs no agent code (evaluation/zip_code_workload), and kept in the user's cache folder
(`$XDG_CACHE_HOME/aether-mcp/python`, else `~/.cache/aether-mcp/python`), where no confined process
can write. Once it exists its path is in ZIP_CODE_ENV, which every child inherits; confined processes
may read that one file, and a judging daemon loads its modules' code from it (confined/python_daemon, and
reference/reference_daemon for pyspark.worker),
each only where the archive's source is the one it was compiled from. Daemons started before it is
made, or by benchmark applications, compile as before.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import threading
from pathlib import Path

from aether_mcp.evaluation.spark_session import ZIP_CODE_ENV
from aether_mcp.processes.made_once import MadeOnce

MAKE_TIMEOUT_S = 120
MAKE_WAIT_S = 20  # how long a candidate worker's start waits for a make under way (about 1.5 s here)


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


# as Spark starts a daemon, with the archives on PYTHONPATH (so no -I), but with no folder of its own on its path (-P)
_CODE = MadeOnce(
    ZIP_CODE_ENV, "python", "pyspark", ".code", lambda: key(),
    lambda partial: [sys.executable, "-B", "-P", "-m", "aether_mcp.evaluation.zip_code_workload", str(partial)],
    lambda: {"PYTHONPATH": os.pathsep.join(map(str, archives()))}, MAKE_TIMEOUT_S, 3,
)  # fmt: skip
folder = _CODE.folder
valid = _CODE.valid


def ensure(wait_s: float = 0.0) -> threading.Thread | None:
    """Point processes started from now on at the compiled code; start making it in the background when there is none
    (`wait_s`: wait that long for it). Never raises: without it, daemons only start more slowly."""
    return _CODE.ensure(wait_s=wait_s)
