"""The watch in every confined process: an audit hook installed before agent code loads, and a step counter.

- The audit hook (`sys.addaudithook`, which nothing can remove) sees what agent code does:
  turning the step counter off or replacing it (`sys.settrace`/`sys.setprofile`), compiling or
  executing code, making code objects or functions (how code is relabelled to look like someone
  else's), reading frames, the garbage collector's object lists, restricted attributes,
  imports outside the allow-list, opening files outside the agent's folders and the Python
  environment, reading or listing /proc and /sys (the process layout, which tells a judged run
  from the job), starting processes, network use, ctypes, signals and environment changes. Each is
  recorded with the agent's file and line; the ones that would blind the watch or reach outside
  are also refused there and then (the call raises `WatchRefused`). Network use counts wherever
  it happens below agent code (a library given a URL connects for it), except through py4j,
  Spark's own channel to its JVM; the kernel seals the network anyway (a namespace with only its
  own loopback), so this is what the audit reports, not what keeps data in.
- Starting a thread has no audit event, so the thread-starting primitives (`_thread` and the
  alias `threading` keeps) are replaced before agent code loads by guards that raise one: a
  thread started for agent code would run where the step counter does not look.
- Agent code is whatever runs from the folders registered with `add_agent_code` (the candidate
  folder, a workspace's tests). Events raised by library code on its own behalf are not the
  agent's; events raised by the standard library on the agent's behalf (a trampoline such as
  `timeit` compiling a string) are.
- `Watch` counts the Python steps (calls and lines) run in agent code, and calls the agent's
  code makes into any Python function, whatever file that function says it came from: per-row
  work shows as steps that grow with the rows. Kernels are excluded (device code on a GPU).
- A tripwire: importing `original`, `udf`, `tests` or `cases` gives a module whose every
  attribute records the access and raises.
Events travel back as JSON (`drain`); the server decides what they mean.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Callable
from typing import Any

from aether_mcp import import_policy

TRIPWIRE_NAMES = ("original", "udf", "tests", "cases", "aether_original")
THREAD_EVENT = "_thread.start_new_thread"  # raised by the guards in place of the thread primitives
# event -> (how it is attributed, refused when agent code raises it)
#   direct: the innermost frame is agent code, or standard library code called by it (a library
#           such as PySpark opening its own sockets for the agent's call is its own business)
#   stack: agent code anywhere on the stack, libraries included (opening a file outside the
#          Python environment is never a library's own business)
#   import: the first frame outside the import machinery is agent code
#   network: agent code anywhere on the stack, unless py4j (Spark's channel to its JVM) is between
EVENTS: dict[str, tuple[str, bool]] = {
    "sys.settrace": ("direct", True),
    "sys.setprofile": ("direct", True),
    "sys.addaudithook": ("direct", True),
    "code.__new__": ("direct", True),
    "function.__new__": ("direct", True),
    "compile": ("direct", False),
    "exec": ("direct", False),
    "sys._getframe": ("direct", True),
    "sys._current_frames": ("direct", True),
    "sys._current_exceptions": ("direct", True),
    "gc.get_objects": ("direct", True),
    "gc.get_referrers": ("direct", True),
    "gc.get_referents": ("direct", True),
    "object.__getattr__": ("direct", True),
    "object.__setattr__": ("direct", False),
    "object.__delattr__": ("direct", True),
    "import": ("import", False),
    "open": ("stack", True),
    "os.listdir": ("stack", True),
    "os.scandir": ("stack", True),
    "os.system": ("direct", True),
    "os.exec": ("direct", True),
    "os.posix_spawn": ("direct", True),
    "os.spawn": ("direct", True),
    "os.fork": ("direct", True),
    "os.forkpty": ("direct", True),
    "os.kill": ("direct", True),
    "os.killpg": ("direct", True),
    "os.putenv": ("direct", True),
    "os.unsetenv": ("direct", True),
    "subprocess.Popen": ("direct", True),
    "socket.connect": ("network", True),
    "socket.bind": ("network", True),
    "socket.sendto": ("network", True),
    "socket.sendmsg": ("network", True),
    "socket.getaddrinfo": ("network", True),
    "socket.gethostbyname": ("network", True),
    "socket.gethostbyaddr": ("network", True),
    THREAD_EVENT: ("direct", True),
    "ctypes.dlopen": ("direct", True),
    "ctypes.dlsym": ("direct", True),
    "ctypes.cdata": ("direct", True),
    "marshal.loads": ("direct", True),
    "pickle.find_class": ("direct", True),
}
MAX_EVENTS = 100
# What a process can learn of where it runs (command lines, environments, parents, mounts, limits)
# differs between a judged run and the job, so reading it below agent code is a finding: the
# attempt is what the audit judges, not what it would have learned.
PROCESS_LAYOUT = ("/proc/", "/sys/")
IMPORT_MACHINERY = (os.path.join("importlib", "__init__.py"), os.path.join("importlib", "_bootstrap.py"), os.path.join("importlib", "_bootstrap_external.py"))


class WatchRefused(PermissionError):
    """Agent code tried something the watch does not allow in a confined process."""


class TripwireTriggered(RuntimeError):
    """The candidate used the original (or the tests) through an import."""


def _stdlib_prefixes() -> tuple[str, ...]:
    # "stdlib" is the base interpreter's; a venv's "platstdlib" is its own lib/, which holds site-packages
    return (os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep,)


def _is_stdlib(state: _State, filename: str) -> bool:
    return filename.startswith(state.stdlib) and f"{os.sep}site-packages{os.sep}" not in filename and f"{os.sep}dist-packages{os.sep}" not in filename


def _allowed_open_prefixes() -> tuple[str, ...]:
    """Where any process may open files: the Python environment, system files, its scratch folder."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.dirname(os.path.realpath(__file__)))}
    found |= {entry for entry in sys.path if entry and os.path.isdir(entry)}
    for name in ("AETHER_SCRATCH", "TMPDIR", "HOME"):
        if os.environ.get(name):
            found.add(os.environ[name])
    found = {os.path.realpath(p) for p in found}
    system = ("/usr", "/lib", "/lib64", "/etc", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/nvidia", "/dev/shm/sem.")
    return tuple(sorted({p.rstrip(os.sep) + os.sep for p in found if p != os.sep})) + system


class _State:
    def __init__(self) -> None:
        self.agent: tuple[str, ...] = ()
        self.events: list[dict[str, Any]] = []
        self.keys: set[tuple[str, str, str, int]] = set()
        self.busy = threading.local()
        self.stdlib = _stdlib_prefixes()
        self.allowed = _allowed_open_prefixes()
        self.check_imports = True
        package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
        self.harness = package + os.sep
        self.library_parts = tuple(os.path.join(package, name) for name in ("backend.py", "arrow_udf.py", "arrow_pandas.py"))
        self.spark_channel = _package_folders("py4j")


_state: _State | None = None
_lock = threading.Lock()


def install(agent_code: list[str] | None = None, candidate: bool = True) -> None:
    """Put the audit hook (and, for candidates, the tripwire) in place (once per process; hooks cannot be removed).

    `candidate`: the agent code is a candidate, held to the import allow-list and kept from the
    original and the tests by the tripwire; test code (run_tests) imports its cases freely.
    """
    global _state
    with _lock:
        if _state is None:
            _state = _State()
            _state.check_imports = candidate
            _guard_threads()
            sys.addaudithook(_make_hook(_state))
            if candidate:
                sys.meta_path.insert(0, _TripwireFinder())
                for name in list(sys.modules):
                    if name.split(".")[0] in TRIPWIRE_NAMES:
                        del sys.modules[name]  # an earlier import must not bypass the tripwire
    for prefix in agent_code or []:
        add_agent_code(prefix)


def installed() -> bool:
    return _state is not None


def add_agent_code(prefix: str) -> None:
    """Code whose file name starts with `prefix` is agent code (the list only grows)."""
    assert _state is not None, "install() first"
    prefix = prefix.rstrip(os.sep)
    if prefix and prefix not in _state.agent:
        _state.agent = _state.agent + (prefix,)


def drain() -> list[dict[str, Any]]:
    """The events recorded since the last drain (each: event, detail, file, line, refused)."""
    if _state is None:
        return []
    with _lock:
        events, _state.events = _state.events, []
        _state.keys = set()  # the next call reports its own events, repeats of earlier ones included
        return events


def _make_hook(state: _State) -> Callable[[str, tuple], None]:
    frame_type = types.FrameType

    def hook(event: str, args: tuple) -> None:
        if event == "object.__getattr__" and type(args[0]) is frame_type:
            # Reading a frame's attributes needs a frame, and every way agent code could get one
            # (sys._getframe, a traceback's or a generator's frame) is refused; the step counter
            # reads a frame's code on every call, so these are answered first and at once.
            return
        rule = EVENTS.get(event)
        if rule is None and event.startswith("os.exec"):
            rule = EVENTS["os.exec"]
        if rule is None or not state.agent or getattr(state.busy, "on", False):
            return
        state.busy.on = True
        try:
            mode, refuse = rule
            # a thread guard raises its event itself: the one responsible is the guard's caller
            frame = _agent_frame(state, sys._getframe(2 if event == THREAD_EVENT else 1), mode)
            if frame is None:
                return
            detail = _detail(state, event, args)
            if detail is None:
                return
            key = (event, detail, frame.f_code.co_filename, frame.f_lineno)
            if key not in state.keys and len(state.events) < MAX_EVENTS:
                state.keys.add(key)
                state.events.append({"event": event, "detail": detail, "file": frame.f_code.co_filename, "line": frame.f_lineno, "refused": refuse})
        finally:
            state.busy.on = False
        if refuse:
            raise WatchRefused(f"aether-mcp watch: {event} ({detail}) is not allowed in candidate code")

    return hook


def _is_agent(state: _State, filename: str) -> bool:
    return any(filename == p or filename.startswith(p + os.sep) for p in state.agent)


def _agent_frame(state: _State, frame: Any, mode: str) -> Any:
    """The agent's frame responsible for an event, or None when the event is not the agent's doing."""
    in_import = False
    while frame is not None:
        filename = frame.f_code.co_filename
        if _is_agent(state, filename):
            return None if (in_import and mode != "import") else frame  # a library loading itself for an import
        if filename.startswith("<frozen importlib") or filename.endswith(IMPORT_MACHINERY):
            in_import = True
        elif mode == "import":
            return None  # a module importing what it needs: only the agent's own imports count
        elif filename.startswith(state.harness) and filename not in state.library_parts:
            return None  # the harness acting for itself (a test's udf_under_test reaching its worker, say)
        elif mode == "network" and filename.startswith(state.spark_channel):
            return None  # PySpark talking to its own JVM for a call the agent made (F.col, say)
        elif mode not in ("stack", "network") and not (_is_stdlib(state, filename) or filename.startswith("<")):
            return None  # library code acting on its own behalf
        frame = frame.f_back
    return None


def _detail(state: _State, event: str, args: tuple) -> str | None:
    """What the event touched, as the record shows it; None when it is not worth recording."""
    if event == "import":
        if not state.check_imports:
            return None
        name = str(args[0]) if args else ""
        return None if import_policy.allowed_while_running(name) else name
    if event in ("os.listdir", "os.scandir"):
        # listing a folder is the agent's business, except the process table and the machine's layout
        real = os.path.realpath(os.fsdecode(args[0])) if args and isinstance(args[0], (str, bytes, os.PathLike)) else ""
        return f"{real} (lists the process layout)" if real.startswith(PROCESS_LAYOUT) or real in ("/proc", "/sys") else None
    if event == "open":
        if not args or not isinstance(args[0], (str, bytes, os.PathLike)):
            return None  # a file descriptor
        path = os.fsdecode(args[0])
        real = os.path.realpath(path)  # `//x`, `/proc/self/root/x` and symlinks resolve to the file itself
        if real.startswith(PROCESS_LAYOUT) or real in ("/proc", "/sys"):
            return f"{real} (read: the process layout)"
        if _is_agent(state, real) or real.startswith(state.allowed) or real in ("/dev/null", "/dev/zero"):
            return None
        mode = str(args[1]) if len(args) > 1 and args[1] is not None else "r"
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0  # os.open passes flags, not a mode
        writes = any(c in mode for c in "wax+") or bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
        return f"{real} ({'write' if writes else 'read'})"
    if event in ("object.__getattr__", "object.__setattr__", "object.__delattr__") and len(args) > 1:
        return f"{type(args[0]).__name__}.{args[1]}"
    if event in ("compile",) and len(args) > 1:
        return f"compiles code as {args[1]!r}"
    if event == "exec":
        code = args[0] if args else None
        return f"executes code of {getattr(code, 'co_filename', '?')!r}"
    if event == THREAD_EVENT:
        return f"starts a thread running {str(args[0])[:80] if args else '?'}"
    if event.startswith("socket."):
        addressed = event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg")
        target = args[1] if addressed and len(args) > 1 else args[:2]
        return f"{event.removeprefix('socket.')} {target!r}"[:160]
    if event == "code.__new__" and len(args) > 1:
        return f"makes a code object labelled {args[1]!r}"
    shown = ", ".join(repr(a)[:80] for a in args[:2])
    return shown


def _package_folders(name: str) -> tuple[str, ...]:
    """The folders a top-level package's files live in, without importing it (it may not be installed)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return ()
    folders = list(spec.submodule_search_locations or []) if spec else []
    return tuple(os.path.realpath(folder) + os.sep for folder in folders)


def _guard_threads() -> None:
    """Replace the thread-starting primitives with guards that raise THREAD_EVENT first (once per process).

    `threading` keeps its own alias of `_thread.start_new_thread`, so both are replaced; a module
    that imports either name later gets the guard.
    """
    import _thread
    import threading

    for owner, name in ((_thread, "start_new_thread"), (threading, "_start_new_thread"), (_thread, "start_joinable_thread"), (threading, "_start_joinable_thread")):
        primitive = getattr(owner, name, None)
        if primitive is None or getattr(primitive, "__aether_guard__", False):
            continue
        setattr(owner, name, _thread_guard(primitive))


def _thread_guard(primitive: Callable[..., Any]) -> Callable[..., Any]:
    def start(function: Any, *args: Any, **kwargs: Any) -> Any:
        sys.audit(THREAD_EVENT, getattr(function, "__qualname__", repr(function)))
        return primitive(function, *args, **kwargs)

    start.__aether_guard__ = True  # type: ignore[attr-defined]
    return start


class _TripwireModule(types.ModuleType):
    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)

        def tripped(*args: Any, **kwargs: Any) -> Any:
            raise TripwireTriggered(f"{self.__name__}.{attribute} was called")

        return tripped


class _TripwireFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: Any = None, target: Any = None):
        if name.split(".")[0] in TRIPWIRE_NAMES or name.startswith("aether_original"):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _TripwireModule(spec.name)

    def exec_module(self, module) -> None:
        return None


_AGENT, _EXCLUDED, _OTHER = 1, 2, 3


class Watch:
    """Counts agent steps inside `with Watch(...)` (`calls`), and threads or processes left behind."""

    def __init__(self, excluded_code: set[Any] | None = None, module: types.ModuleType | None = None) -> None:
        assert _state is not None, "install() first"
        self.state = _state
        self.excluded = excluded_code or set()
        self.globals = vars(module) if module is not None else None
        self.kinds: dict[Any, int] = {}
        self.running: set[Any] = set()
        self.calls = 0

    def __enter__(self) -> Watch:
        self.threads = threading.active_count()
        self.children = _children()
        sys.settrace(self._trace)
        return self

    def stop_counting(self) -> None:
        """Stop counting steps (the count so far stands); what is left behind is still checked on exit."""
        sys.settrace(None)

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(None)
        self.threads_left = max(0, threading.active_count() - self.threads)
        self.children_left = max(0, len(_children() - self.children))

    def _trace(self, frame, event: str, arg: Any) -> Any:
        """Counts calls into, and lines run in, agent code, and calls agent code makes into any function.

        Called for every Python call in the process while the watch is on, so it reads as little
        as it can. With the agent's module given, its frames are known by their globals (a frame's
        code is an audited read, its globals are not); otherwise each code object is classified
        once by file. The agent's running frames are kept in a set, so a call's caller is checked
        without reading it.
        """
        if self.globals is not None:
            if frame.f_globals is self.globals and frame.f_code not in self.excluded:
                self.calls += 1
                self.running.add(frame)
                return self._line
        else:
            code = frame.f_code
            kind = self.kinds.get(code) or self._classify(code)
            if kind == _AGENT:
                self.calls += 1
                self.running.add(frame)
                return self._line
            if kind == _EXCLUDED:
                return None
        if frame.f_back in self.running:
            self.calls += 1  # a callback the agent's code handed to map(), sorted(key=), reduce()... counts as its own
        return None

    def _classify(self, code: Any) -> int:
        kind = _EXCLUDED if code in self.excluded else _AGENT if _is_agent(self.state, code.co_filename) else _OTHER
        self.kinds[code] = kind
        return kind

    def _line(self, frame, event: str, arg: Any) -> Any:
        if event == "line":
            self.calls += 1
        elif event == "return":
            self.running.discard(frame)
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


MAX_STATE_ITEMS = 200_000  # values visited per digest of a module's state


def module_state(module: types.ModuleType) -> dict[str, str]:
    """A digest per module-level name of what the candidate's module holds, to compare before and after a call.

    Modules and library functions and classes are left out (they are not the candidate's state);
    arrays and frames count by content, containers element by element, the candidate's own
    functions by their defaults, closures and attributes, its own classes and their instances
    by their attributes, and any other object by its pickled bytes (a random generator's state,
    say). A change between two calls is state kept across calls, however it was written
    (`out=` into a module-level array, `.append`, an attribute of a module-level object).
    """
    budget = [MAX_STATE_ITEMS]
    found = {}
    for name, value in sorted(vars(module).items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        digest = hashlib.sha256()
        _feed_state(digest, value, module, 0, set(), budget)
        found[name] = digest.hexdigest()
    return found


def _feed_state(digest: Any, value: Any, module: types.ModuleType, depth: int, seen: set[int], budget: list[int]) -> None:
    import pickle

    budget[0] -= 1
    if budget[0] < 0 or depth > 8:
        digest.update(b"...")
        return
    kind = type(value)
    digest.update(kind.__qualname__.encode())
    if value is None or kind in (bool, int, float, complex, str, bytes):
        digest.update(repr(value).encode())
        return
    if id(value) in seen:
        digest.update(b"<seen>")
        return
    seen.add(id(value))
    own = getattr(kind, "__module__", None) == module.__name__
    if isinstance(value, types.ModuleType):
        digest.update(value.__name__.encode())
        return
    if isinstance(value, types.FunctionType):
        if value.__code__.co_filename != getattr(module, "__file__", None):
            digest.update(value.__qualname__.encode())
            return
        cells = [cell.cell_contents for cell in value.__closure__ or () if _filled(cell)]
        for part in (value.__defaults__, value.__kwdefaults__, cells, dict(vars(value))):
            _feed_state(digest, part, module, depth + 1, seen, budget)
        return
    if isinstance(value, type):
        if value.__module__ != module.__name__:
            digest.update(value.__qualname__.encode())
            return
        _feed_state(digest, {k: v for k, v in vars(value).items() if not (k.startswith("__") and k.endswith("__"))}, module, depth + 1, seen, budget)
        return
    if hasattr(value, "__array_interface__") and hasattr(value, "tobytes"):  # a NumPy array
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(value.tobytes())
        return
    if kind.__module__.startswith("pandas"):
        digest.update(checksum([value]).encode() if hasattr(value, "index") else repr(value).encode())
        return
    if isinstance(value, dict):
        for key, item in list(value.items()):
            _feed_state(digest, key, module, depth + 1, seen, budget)
            _feed_state(digest, item, module, depth + 1, seen, budget)
        return
    if isinstance(value, (list, tuple)) or kind.__name__ == "deque":
        for item in list(value):
            _feed_state(digest, item, module, depth + 1, seen, budget)
        return
    if isinstance(value, (set, frozenset)):
        digest.update(repr(sorted(repr(item) for item in value)).encode())
        return
    if own and hasattr(value, "__dict__"):
        _feed_state(digest, dict(vars(value)), module, depth + 1, seen, budget)
        return
    if callable(value) and not own:
        digest.update(repr(kind).encode())  # a library's function or kernel: not the candidate's state
        return
    if kind.__module__ == "decimal" and kind.__name__ == "Context":
        # the flags record which signals arithmetic raised so far; the settings are the state that matters
        digest.update(repr((value.prec, value.rounding, value.Emin, value.Emax, value.capitals, value.clamp, sorted(map(str, value.traps.items())))).encode())
        return
    try:
        digest.update(pickle.dumps(value, protocol=4))
    except Exception:
        digest.update(repr(value).encode())


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (reading an empty cell raises ValueError)
    except ValueError:
        return False
    return True


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
