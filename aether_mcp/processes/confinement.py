"""Confinement of every process that runs agent code: Landlock for files, a network namespace, a PID namespace.

A confined process reads the Python environment, system libraries and the few agent files it
is given (a candidate's folder, a workspace's tests); it writes only a scratch folder made for
it; its environment names nothing of the server's state. Landlock enforces the file system part
in the kernel (`aether_mcp.confined.launch` enters the domain before the process exists). The
process starts in a network namespace of its own (`unshare --net`) whose only interface is a
loopback of its own, brought up by the launcher: Spark's JVM, its Python workers and the driver
talk over it, and nothing they send, TCP or UDP, reaches the host or beyond; the server talks to
its workers over Unix sockets in their scratch folder. Where the machine allows it, the process
is also PID 1 of a fresh PID and mount namespace: when it ends, the kernel ends everything it
started, double forks and `setsid` included. The machine's abilities are probed once, from first
principles: a probe process must fail to read a file outside its policy, to write outside its
scratch, and to reach a listener the server opened on the host's loopback, while its own
loopback works.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

import aether_mcp
from aether_mcp.confined import landlock
from aether_mcp.confined.launch import CONFINEMENT_FAILED
from aether_mcp.evaluation.spark_session import CLASS_ARCHIVE_ENV, ZIP_CODE_ENV
from aether_mcp.processes import class_archive, zip_code_cache

SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev")
DEVICE_WRITE = ("/dev/null", "/dev/zero", "/dev/full")
# Environment a confined process may inherit; the server's state directory is never among them.
INHERITED_ENV = (
    "PATH", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "JAVA_HOME", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "NUMBA_CUDA_DRIVER",
    CLASS_ARCHIVE_ENV,
    ZIP_CODE_ENV,
)
PROBE_TIMEOUT_S = 30
# Set in the server's environment to run agent code unconfined (measurements only; results say so).
DISABLE_ENV = "AETHER_MCP_UNCONFINED"


class ConfinementStatus(BaseModel):
    """Whether the processes that ran agent code for a result were confined, and how (or why not)."""

    confined: bool = Field(description="agent code ran in processes that could read neither original/ nor .aether/ nor the server's state, and could write only a scratch folder")
    how: str = Field(description="the mechanism (Landlock ABI, PID namespace), or why confinement was not possible here")
    pid_namespace: bool = Field(False, description="every process it started ended with it, double forks included")
    network_sealed: bool = Field(False, description="it ran in a network namespace with only a loopback of its own: nothing it sent left it")


@dataclass(frozen=True)
class Machine:
    """What this machine offers, probed once per server."""

    landlock_abi: int
    namespaces: list[str] | None  # the unshare prefix, None when namespaces cannot be made
    problem: str | None  # why Landlock confinement is unavailable; None when it works
    network: str | None = None  # why a network namespace cannot be made here; None when it seals


@dataclass
class Policy:
    """What one confined process may read and write (besides the Python environment and system files)."""

    read: list[str]
    write: list[str]


_machine: Machine | None = None
_machine_lock = threading.Lock()


def machine() -> Machine:
    """This machine's confinement abilities (probed on first use, then remembered)."""
    global _machine
    with _machine_lock:
        if _machine is None:
            _machine = _probe()
        return _machine


def python_paths() -> list[str]:
    """Folders a confined Python needs to read: the interpreter, its libraries, site-packages, this package."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(aether_mcp.__file__).resolve().parent)}
    paths |= {value for key, value in sysconfig.get_paths().items() if key in ("stdlib", "platstdlib", "purelib", "platlib", "include")}
    for entry in sys.path:
        if entry and os.path.isdir(entry) and ("site-packages" in entry or "dist-packages" in entry or entry.startswith((sys.prefix, sys.base_prefix))):
            paths.add(entry)
    paths |= set(_editable_sources())
    java = shutil.which("java")
    for extra in (os.environ.get("JAVA_HOME"), os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), str(Path(java).resolve().parents[1]) if java else None):
        if extra:
            paths.add(extra)
    return sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)})


def read_paths(extra: list[str]) -> list[str]:
    archive = os.environ.get(CLASS_ARCHIVE_ENV)  # Spark's classes, mapped by every JVM: that one file, if it is one the server made
    shared = {os.path.realpath(archive)} if class_archive.valid(archive) else set()
    compiled = os.environ.get(ZIP_CODE_ENV)  # PySpark's zipped modules compiled, read by judging daemons: that one file
    shared |= {os.path.realpath(compiled)} if zip_code_cache.valid(compiled) else set()
    return sorted(set(SYSTEM_READ) | set(python_paths()) | shared | {os.path.realpath(p) for p in extra})


def write_paths(scratch: list[str]) -> list[str]:
    devices = [str(p) for p in Path("/dev").glob("nvidia*")]
    return sorted({os.path.realpath(p) for p in scratch} | set(DEVICE_WRITE) | set(devices))


def wrap(argv: list[str], policy: Policy, forbidden: list[Path], network: str | None = None) -> tuple[list[str], ConfinementStatus]:
    """`argv` started confined under `policy`, and what the result may say about it.

    `forbidden`: folders a confined process must not read (the server root, the state folder).
    If one of them lies inside a folder the process must read (a root inside the Python
    environment, say), Landlock cannot tell them apart: the process then runs unconfined and the
    status says why.
    `network`: None seals the process in a network namespace of its own; a reason (the process
    drives a cluster at a given address, say) leaves it on the host's network, and then it is
    not confined and the status says why. Where this machine cannot make a network namespace,
    the process is not confined either.
    """
    if os.environ.get(DISABLE_ENV) == "1":
        return argv, ConfinementStatus(confined=False, how=f"not confined: the server was started with {DISABLE_ENV}=1")
    found = machine()
    read = read_paths(policy.read)
    write = write_paths(policy.write)
    problem = found.problem or _overlap(read, [p for p in policy.read], forbidden)
    if problem:
        return argv, ConfinementStatus(confined=False, how=f"not confined: {problem}")
    sealed = network is None and found.network is None
    launcher = [sys.executable, "-I", "-B", "-m", "aether_mcp.confined.launch", json.dumps({"read": read, "write": write, "loopback": sealed}), "--"]
    prefix = list(found.namespaces or [])
    if sealed:
        prefix.insert(1, "--net")
    where = "in its own PID and mount namespace" if prefix else "without a PID namespace (unshare is not available here), so only its process group is ended"
    how = f"Landlock ABI {found.landlock_abi}: reads the Python environment and the files it is given, writes only its scratch folder; {where}"
    if sealed:
        how += "; in a network namespace with only its own loopback"
    else:
        how = f"not confined: on the host's network ({network or found.network}); otherwise {how}"
    return [*prefix, *launcher, *argv], ConfinementStatus(confined=sealed, how=how, pid_namespace=bool(found.namespaces), network_sealed=sealed)


def network_need(master: str | None) -> str | None:
    """Why a process that runs Spark on `master` needs the host's network (None: local mode, which it does not)."""
    if not master or master.startswith("local"):
        return None
    return f"its Spark application drives {master}, which a sealed network could not reach"


def environment(scratch: Path, extra: dict[str, str] | None = None, confined: bool = False) -> dict[str, str]:
    """A confined process's whole environment: the inherited basics, every home and cache in `scratch`.

    `confined`: the process runs under Landlock, so its Spark Python workers narrow their writes further.
    """
    env = {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    home, tmp, cache = scratch / "home", scratch / "tmp", scratch / "cache"
    for folder in (home, tmp, cache):
        folder.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "XDG_CACHE_HOME": str(cache),
            "XDG_CONFIG_HOME": str(cache),
            "XDG_STATE_HOME": str(cache),
            "MPLCONFIGDIR": str(cache),
            "NUMBA_CACHE_DIR": str(cache),
            "CUPY_CACHE_DIR": str(cache),
            "CUDA_CACHE_PATH": str(cache),
            "AETHER_SCRATCH": str(scratch),
        }
    )
    if confined:
        env["AETHER_CONFINED"] = "1"
    env.update(extra or {})
    return env


class Scratch:
    """A folder made for one call, outside every workspace, deleted when the call ends.

    `label`: a name for the server's own folders; a folder agent code works in has none (a plain
    temporary folder, so no path it sees names the harness).
    """

    def __init__(self, label: str | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"aether-{label}-" if label else None))

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def empty(folder: Path) -> None:
    """Delete what a folder holds, keeping the folder itself (a Landlock rule names it by inode)."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            try:
                entry.unlink()
            except OSError:
                pass


def _overlap(read: list[str], given: list[str], forbidden: list[Path]) -> str | None:
    allowed_inside = [os.path.realpath(p) for p in given]
    for secret in forbidden:
        secret_real = os.path.realpath(secret)
        for path in read:
            if path in allowed_inside:
                continue  # the agent's own files, which lie inside the root by design
            if secret_real == path or secret_real.startswith(path.rstrip("/") + "/"):
                return f"{secret_real} lies inside {path}, which confined processes must read; move it elsewhere"
    return None


def _editable_sources() -> list[str]:
    """Source folders of editable installs (setuptools' __editable__ finders), which sys.path does not list."""
    found = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry) or "site-packages" not in entry:
            continue
        for finder in Path(entry).glob("__editable___*_finder.py"):
            try:
                tree = ast.parse(finder.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError):
                continue
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MAPPING" for t in node.targets):
                    try:
                        found += [str(v) for v in ast.literal_eval(node.value).values()]
                    except ValueError:
                        pass
    return found


def _probe() -> Machine:
    version = landlock.abi()
    namespaces = _namespace_prefix()
    if version < 1:
        return Machine(0, namespaces, "this kernel offers no Landlock (Linux 5.13+ with Landlock enabled)")
    network = None if namespaces and _can_unshare([*namespaces[:1], "--net", *namespaces[1:]]) else "this machine cannot make a network namespace (unshare --net)"
    with tempfile.TemporaryDirectory(prefix="aether-probe-") as base, socket.create_server(("127.0.0.1", 0)) as listener:
        outside = Path(base) / "outside"
        scratch = Path(base) / "scratch"
        outside.mkdir()
        scratch.mkdir()
        secret = outside / "secret"
        secret.write_text("x")
        host_port = listener.getsockname()[1]
        check = (
            "import socket, sys\n"
            "def refused(action):\n"
            "    try:\n        action()\n    except PermissionError:\n        return True\n    return False\n"
            f"ok = refused(lambda: open({str(secret)!r}).read()) and refused(lambda: open({str(outside / 'written')!r}, 'w'))\n"
            f"open({str(scratch / 'ok')!r}, 'w').write('1')\n"
            "if sys.argv[1] == 'sealed':\n"
            "    try:\n"
            f"        socket.create_connection(('127.0.0.1', {host_port}), timeout=5).close()\n"
            "        sys.exit(4)\n"
            "    except OSError:\n"
            "        pass\n"
            "    with socket.create_server(('127.0.0.1', 0)) as own:\n"
            "        socket.create_connection(own.getsockname(), timeout=5).close()\n"
            "sys.exit(0 if ok else 3)\n"
        )
        sealed = network is None
        policy = json.dumps({"read": read_paths([]), "write": write_paths([str(scratch)]), "loopback": sealed})
        prefix = [*namespaces[:1], "--net", *namespaces[1:]] if sealed and namespaces else (namespaces or [])
        argv = [*prefix, sys.executable, "-I", "-B", "-m", "aether_mcp.confined.launch", policy, "--", sys.executable, "-I", "-B", "-c", check, "sealed" if sealed else "open"]
        try:
            ended = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S, env=environment(scratch))
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Machine(version, namespaces, f"the confinement probe could not run ({exc})", network)
        if ended.returncode == CONFINEMENT_FAILED:
            return Machine(version, namespaces, f"Landlock refused the policy: {ended.stderr.decode(errors='replace').strip()[-300:]}", network)
        if ended.returncode == 3:
            return Machine(version, namespaces, "Landlock did not stop a probe from reading or writing outside its policy", network)
        if ended.returncode == 4:
            return Machine(version, namespaces, None, "a probe in its own network namespace still reached the host's loopback")
        if ended.returncode != 0 or not (scratch / "ok").exists():
            return Machine(version, namespaces, f"the confinement probe failed (exit {ended.returncode}: {ended.stderr.decode(errors='replace').strip()[-300:]})", network)
    return Machine(version, namespaces, None, network)


def _namespace_prefix() -> list[str] | None:
    """`unshare` arguments that start a process as PID 1 of new PID and mount namespaces, if this machine allows it."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        return None
    prefix = [unshare, "--pid", "--fork", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0:
        prefix[1:1] = ["--user", "--map-root-user"]
    return prefix if _can_unshare(prefix) else None


def _can_unshare(prefix: list[str]) -> bool:
    try:
        ended = subprocess.run([*prefix, "true"], stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return ended.returncode == 0
