"""Runs where candidate code runs (Spark's Python workers, or the candidate worker for sql builds):
watches what the candidate does while it loads and evaluates.

- A tripwire: importing `original`, `udf`, `tests` or `cases` gives a module whose every
  attribute records the access and raises, so reaching for the original is recorded.
- A permanent audit hook (active only inside a watch) records opening files of the workspace,
  starting processes, sockets and ctypes.
- A trace counts the Python steps (calls and lines) run in the candidate's own code (kernels
  excluded: on a GPU they are device code), so per-row Python work, a loop as much as a
  callback, shows as steps that grow with the rows.
- Inputs are checksummed before and after the call; threads and child processes left behind
  are counted.
Findings travel back as JSON; the server decides what they mean.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import types
from typing import Any

TRIPWIRE_NAMES = ("original", "udf", "tests", "cases", "aether_original")
# Folders of the workspace a candidate has no business opening while it loads or runs.
FORBIDDEN_DIRS = ("original", "tests", ".aether")
WATCHED_EVENTS = ("subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "socket.connect", "socket.bind", "ctypes.dlopen", "ctypes.cdata")

_state: dict[str, Any] = {"active": False, "events": [], "workspace": None, "hooked": False, "filename": None}


class TripwireTriggered(RuntimeError):
    """The candidate used the original (or the tests) through an import."""


class _TripwireModule(types.ModuleType):
    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        _record(f"tripwire: used {self.__name__}.{attribute}")

        def tripped(*args: Any, **kwargs: Any) -> Any:
            raise TripwireTriggered(f"{self.__name__}.{attribute} was called")

        return tripped


class _TripwireFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: Any = None, target: Any = None):
        if not _state["active"]:
            return None
        if name.split(".")[0] in TRIPWIRE_NAMES or name.startswith("aether_original"):
            _record(f"tripwire: imported {name}")
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _TripwireModule(spec.name)

    def exec_module(self, module) -> None:
        return None


def _from_candidate() -> bool:
    """Whether the candidate's own code, not Spark's plumbing (py4j sockets, say), caused the event."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == _state["filename"]:
            return True
        if f"{os.sep}pyspark{os.sep}" in filename or f"{os.sep}py4j{os.sep}" in filename:
            return False
        frame = frame.f_back
    return True


def _audit_hook(event: str, args: tuple) -> None:
    if not _state["active"]:
        return
    if not (event == "open" or event.startswith(WATCHED_EVENTS)) or not _from_candidate():
        return
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        workspace = _state["workspace"]
        if workspace and os.path.abspath(path).startswith(workspace + os.sep):
            relative = os.path.relpath(os.path.abspath(path), workspace)
            if relative.split(os.sep)[0] in FORBIDDEN_DIRS:
                _record(f"opened {relative}")
    elif event.startswith(WATCHED_EVENTS):
        _record(f"{event}")


def _record(text: str) -> None:
    if len(_state["events"]) < 50 and text not in _state["events"]:
        _state["events"].append(text)


def install(workspace: str) -> None:
    """Put the tripwire and the audit hook in place in this process (once; hooks cannot be removed)."""
    _state["workspace"] = os.path.abspath(workspace)
    if not _state["hooked"]:
        sys.addaudithook(_audit_hook)
        sys.meta_path.insert(0, _TripwireFinder())
        _state["hooked"] = True
    for name in list(sys.modules):
        if name.split(".")[0] in TRIPWIRE_NAMES:
            del sys.modules[name]  # an earlier, unwatched import must not bypass the tripwire


class Watch:
    """Records what happens inside `with Watch(...)`: events, the candidate's Python steps (`calls`), leftovers."""

    def __init__(self, filename: str, excluded_code: set[Any] | None = None) -> None:
        self.filename = filename
        self.excluded = excluded_code or set()
        self.calls = 0

    def __enter__(self) -> Watch:
        _state["filename"] = self.filename
        _state["active"] = True
        _state["events"] = []
        self.threads = threading.active_count()
        self.children = _children()
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(None)
        _state["active"] = False
        self.events = list(_state["events"])
        self.threads_left = max(0, threading.active_count() - self.threads)
        self.children_left = max(0, len(_children() - self.children))

    def _trace(self, frame, event: str, arg: Any) -> Any:
        """Counts calls into, and lines run in, the candidate's own code; everything else runs untraced."""
        code = frame.f_code
        if code.co_filename != self.filename or code in self.excluded:
            return None
        self.calls += 1
        return self._line

    def _line(self, frame, event: str, arg: Any) -> Any:
        if event == "line":
            self.calls += 1
        return self._line


def kernel_code(module: types.ModuleType) -> set[Any]:
    """Code objects of the module's jit-compiled functions (device code on a GPU)."""
    found = set()
    for value in vars(module).values():
        function = getattr(value, "py_func", None) or getattr(value, "fn", None)
        code = getattr(function, "__code__", None)
        if code is not None and type(value).__module__.startswith("numba"):
            found.add(code)
    return found


def checksum(series: list[Any]) -> str:
    digest = hashlib.sha256()
    for item in series:
        try:
            import pandas as pd

            digest.update(pd.util.hash_pandas_object(item, index=False).values.tobytes())
        except Exception:
            if hasattr(item, "to_arrow"):  # a cuDF Series on the GPU backend
                digest.update(repr(item.to_arrow().to_pylist()).encode())
                continue
            digest.update(repr(list(item)).encode())
    return digest.hexdigest()


def _children() -> set[int]:
    me = os.getpid()
    found = set()
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as handle:
                        if int(handle.read().split(b")")[-1].split()[1]) == me:
                            found.add(int(entry))
                except (OSError, ValueError, IndexError):
                    continue
    except OSError:
        pass
    return found
