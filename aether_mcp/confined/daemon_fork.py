"""Fresh Python daemons for the judge, forked from one that is kept ready instead of started each time.

The candidate worker ends every Spark Python daemon whenever the next request is for another
candidate (see candidate_worker), so each candidate used to pay for a new interpreter importing
NumPy, pandas, PyArrow and PySpark's worker (about 1 CPU-second, half of it compiling PySpark's
modules out of its zip archive, where no bytecode is cached). Here a ready process does those
imports once and forks a daemon for each request, which then becomes exactly the daemon Spark
would have started:

- The process Spark starts (`python -m aether_mcp.confined.python_daemon`) is a stub. It hands its
  standard input, output and error and its whole environment to the ready process over a Unix
  socket in the worker's scratch folder (`daemons/`), waits for the forked daemon to end and exits
  with its status; it passes SIGTERM on. The first stub starts the ready process.
- The ready process runs harness code only and never a candidate's: each daemon it forks takes the
  stub's environment, command line, working folder and streams, stacks its own Landlock domain
  (writes to the call's scratch only, as before) and runs PySpark's `daemon.manager()`. Its workers
  live in that narrower domain, which can neither signal nor trace the ready process, nor make or
  remove files in `daemons/`.
- Only a stub Spark started is served: the peer's parent must be the JVM that started the first
  stub, and its executable this interpreter. A fork is refused, and the stub runs the daemon
  itself as before, unless what Python fixed at start-up would be the same: `sys.path`,
  `sys.flags`, the executable, and every environment variable but the per-factory secret.
- Used only where the process is confined under Landlock with signal scoping (ABI 6 or newer);
  elsewhere every daemon starts as before.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
from pathlib import Path

FOLDER = "daemons"
SOCKET = "fork.sock"
PID_FILE = "ready.pid"
ZYGOTE_ARG = "--ready-to-fork"
# Set per worker factory by Spark, read only when a worker connects: the one variable allowed to differ
PER_FACTORY = frozenset({"PYTHON_WORKER_FACTORY_SECRET"})
CONNECT_TIMEOUT_S = 10.0
MAX_REQUEST = 4 << 20


def folder() -> Path | None:
    """The ready process's folder for this process, or None where daemons start as before."""
    scratch = os.environ.get("AETHER_SCRATCH")
    if not scratch or os.environ.get("AETHER_CONFINED") != "1" or os.environ.get("AETHER_DAEMON_GC_FREEZE") != "1":
        return None
    from aether_mcp.confined import landlock

    if landlock.abi() < 6:
        return None
    return Path(scratch) / FOLDER


def _start_state() -> dict:
    """What Python fixed when it started, which a forked daemon inherits instead of computing."""
    return {
        "path": list(sys.path),
        "flags": list(sys.flags),
        "executable": sys.executable,
        "env": {name: value for name, value in os.environ.items() if name not in PER_FACTORY},
    }


# ---------------------------------------------------------------- the stub Spark starts


def delegate(where: Path) -> int | None:
    """Have the ready process fork this daemon; its exit status, or None to start the daemon here."""
    try:
        conn = _connect(where)
    except OSError:
        return None
    with conn:
        request = dict(_start_state(), env=dict(os.environ), argv=list(sys.argv), orig_argv=list(getattr(sys, "orig_argv", [])), cwd=os.getcwd())
        body = json.dumps(request).encode()
        try:
            socket.send_fds(conn, [struct.pack("!I", len(body)) + body], [0, 1, 2])
            reply = _read_message(conn)
        except (OSError, ValueError):
            return None
        pid = reply.get("pid")
        if not isinstance(pid, int):
            print(f"aether-mcp: the daemon starts itself ({reply.get('refused')})", file=sys.stderr)
            return None

        def forward(signum, frame):  # Spark ends its daemon with SIGTERM
            try:
                os.kill(pid, signum)
            except OSError:
                pass

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for fd in (0, 1):  # the daemon holds them now; Spark sees them close when it ends
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, fd)
            os.close(devnull)
        try:
            ended = _read_message(conn)
        except (OSError, ValueError):
            ended = {}
        if "status" not in ended:  # the ready process is gone: so is the daemon
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            return 1
        return int(ended["status"])


def _connect(where: Path) -> socket.socket:
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    started = None
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(str(where / SOCKET))
            return conn
        except OSError as exc:
            conn.close()
            if exc.errno not in (errno.ENOENT, errno.ECONNREFUSED) or time.monotonic() > deadline:
                raise
        if started is None:
            started = _start_ready_process(where) or False
        elif started and started.poll() is not None:
            raise OSError(f"the ready process ended with status {started.returncode} (see {where / 'ready.log'})")
        time.sleep(0.02)


def _start_ready_process(where: Path):
    """Start the ready process (its Popen), unless another stub is starting one (it holds the folder's lock): None."""
    import subprocess

    where.mkdir(exist_ok=True)
    lock = os.open(where / "start.lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return None
    try:
        (where / SOCKET).unlink(missing_ok=True)  # a ready process that ended leaves its socket
        with open(where / "ready.log", "ab") as log:
            return subprocess.Popen(
                [sys.executable, *_interpreter_options(), "-m", "aether_mcp.confined.python_daemon", ZYGOTE_ARG, str(lock)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, close_fds=True, process_group=0, pass_fds=(lock,), env=_environment_as_started(),
            )
    finally:
        os.close(lock)  # the ready process keeps the lock until it listens


def _environment_as_started() -> dict[bytes, bytes] | None:
    """The environment Spark gave this stub, as the kernel keeps it: Python may have added to its own copy at start
    (LC_CTYPE where the locale was C), and a process started from that copy would start differently (its UTF-8 mode)."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return None
    return dict(entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)


def _interpreter_options() -> list[str]:
    """The interpreter options this stub was started with (Spark gives none; kept should it ever)."""
    started = list(getattr(sys, "orig_argv", []))
    return started[1 : started.index("-m")] if "-m" in started else []


def _read_message(conn: socket.socket) -> dict:
    head = _read_exactly(conn, 4)
    (length,) = struct.unpack("!I", head)
    if length > MAX_REQUEST:
        raise ValueError("message too long")
    return json.loads(_read_exactly(conn, length))


def _read_exactly(conn: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = conn.recv(count - len(data))
        if not chunk:
            raise ValueError("closed")
        data += chunk
    return data


def _send(conn: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode()
    conn.sendall(struct.pack("!I", len(body)) + body)


# ---------------------------------------------------------------- the ready process


def serve(prepare, run, start_lock: int) -> None:
    """The ready process: `prepare()` (the watch and the imports), then fork a daemon for each stub Spark starts,
    which takes the stub's place and calls `run()`.

    `start_lock`: the descriptor of the folder's start lock, held (with the stub that started it) until it listens.
    """
    where = Path(os.environ["AETHER_SCRATCH"]) / FOLDER
    jvm = _parent_of(os.getppid())
    state = _start_state()  # as the stubs' will be: before anything runs here
    prepare()
    sys.stdout.flush()
    sys.stderr.flush()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(where / SOCKET))
    listener.listen(64)
    (where / PID_FILE).write_text(str(os.getpid()))
    os.close(start_lock)
    waiting: dict[int, socket.socket] = {}  # daemon pid -> its stub's connection
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *args: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "listen")
    selector.register(wake_r, selectors.EVENT_READ, "wake")
    while True:
        if not os.path.exists(f"/proc/{jvm}"):
            return  # its JVM is gone: no stub will come
        for key, _ in selector.select(timeout=1.0):
            if key.data == "wake":
                os.read(wake_r, 512)
            elif key.data == "listen":
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                child = _fork_for(conn, jvm, state, [listener, wake_r, wake_w, selector], run)
                if child is None:
                    conn.close()
                else:
                    waiting[child] = conn
                    selector.register(conn, selectors.EVENT_READ, child)
            else:  # a stub's connection closed: Spark killed the stub, so the daemon goes too
                child = key.data
                try:
                    os.killpg(child, signal.SIGKILL)
                except OSError:
                    pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                selector.unregister(conn)
                try:
                    _send(conn, {"status": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)})
                except OSError:
                    pass
                conn.close()


def _parent_of(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return -1
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _refusal(conn: socket.socket, jvm: int, state: dict, request: dict) -> str | None:
    """Why this peer gets no fork, or None."""
    pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if _parent_of(pid) != jvm:
        return "the peer is not a process Spark started"
    try:
        if os.path.realpath(f"/proc/{pid}/exe") != os.path.realpath(sys.executable):
            return "the peer is not this interpreter"
    except OSError:
        return "the peer is gone"
    for name in ("path", "flags", "executable"):
        if request.get(name) != state[name]:
            return f"its {name} differs from the ready process's: {request.get(name)} where the ready process has {state[name]}"
    env = {name: value for name, value in dict(request.get("env") or {}).items() if name not in PER_FACTORY}
    if env != state["env"]:
        changed = sorted(set(env.items()) ^ set(state["env"].items()))
        return f"its environment differs from the ready process's ({', '.join(sorted({name for name, _ in changed})[:5])})"
    return None


def _fork_for(conn: socket.socket, jvm: int, state: dict, close: list, run) -> int | None:
    """Fork a daemon for the stub on `conn`; its pid, or None when refused."""
    try:
        conn.settimeout(10)
        head, fds, _, _ = socket.recv_fds(conn, 4, 3)
        if len(head) != 4 or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            return None
        (length,) = struct.unpack("!I", head)
        if length > MAX_REQUEST:
            raise ValueError("request too long")
        request = json.loads(_read_exactly(conn, length))
        why = _refusal(conn, jvm, state, request)
    except (OSError, ValueError):
        return None
    if why is not None:
        for fd in fds:
            os.close(fd)
        try:
            _send(conn, {"refused": why})
        except OSError:
            pass
        return None
    pid = os.fork()
    if pid == 0:  # never returns: the daemon's exit is the process's
        code = 1
        try:
            _become_daemon(conn, fds, request, close)
            run()
            code = 0
        except SystemExit as exc:  # PySpark's daemon ends with sys.exit
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
    for fd in fds:
        os.close(fd)
    try:
        _send(conn, {"pid": pid})
    except OSError:
        os.kill(pid, signal.SIGKILL)
        return None
    return pid


def _become_daemon(conn: socket.socket, fds: list[int], request: dict, close: list) -> None:
    """In the forked child: take the stub's place (its streams, environment, command line and folder)."""
    from aether_mcp.confined import watch

    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL if signum != signal.SIGINT else signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for item in close:
        if isinstance(item, int):
            os.close(item)
        else:
            item.close()
    conn.detach()  # the ready process keeps this connection; the child lets go of it without a shutdown
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv[:] = request["argv"]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv[:] = request["orig_argv"]
    if "numpy.random" in sys.modules:  # as fresh as a started interpreter's (Python's own random reseeds at fork)
        sys.modules["numpy.random"].seed()
    watch.refresh_places()
