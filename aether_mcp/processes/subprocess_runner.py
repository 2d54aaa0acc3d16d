"""The one way this project starts a process.

Every process: an argv list (never a shell), stdin closed, its own process group (so a kill
takes its children, a JVM included), an allow-listed environment, and stdout+stderr copied to
a log file on disk up to a cap while the last few KB stay in memory for messages. `run` adds a
hard timeout and cancellation that kill the whole group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aether_mcp import call_scope
from aether_mcp.evaluation.spark_session import CLASS_ARCHIVE_ENV, ZIP_CODE_ENV

# Variables a child may inherit from the server; everything else is dropped.
ALLOWED_ENV = (
    CLASS_ARCHIVE_ENV,
    ZIP_CODE_ENV,
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "JAVA_HOME",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "NUMBA_CUDA_DRIVER",
)

DEFAULT_MAX_LOG_BYTES = 32 * 1024 * 1024
TAIL_BYTES = 8 * 1024


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment plus `extra`."""
    env = {name: os.environ[name] for name in ALLOWED_ENV if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update(extra or {})
    return env


@dataclass
class ProcessResult:
    """How a finished process ended and where its output is."""

    returncode: int | None
    timed_out: bool
    cancelled: bool
    duration_s: float
    log_path: Path
    output_bytes: int
    log_truncated: bool
    tail: str


class RunningProcess:
    """A started process whose output is being copied to its log file."""

    def __init__(self, argv: list[str], *, cwd: Path, log_path: Path, env: dict[str, str], max_log_bytes: int) -> None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        self.started = time.monotonic()
        self._max_log_bytes = max_log_bytes
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.output_bytes = 0
        self.log_truncated = False
        self.popen = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
        self._reader = threading.Thread(target=self._copy_output, name=f"log:{log_path.name}", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """Kill the whole process group (idempotent)."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def finish_output(self, timeout: float = 5.0) -> None:
        self._reader.join(timeout)

    def tail(self) -> str:
        return b"".join(self._tail).decode("utf-8", errors="replace")[-TAIL_BYTES:]

    def _copy_output(self) -> None:
        assert self.popen.stdout is not None
        with open(self.log_path, "wb") as log:
            while True:
                chunk = self.popen.stdout.read1(65536)
                if not chunk:
                    break
                self.output_bytes += len(chunk)
                room = self._max_log_bytes - log.tell()
                if room > 0:
                    log.write(chunk[:room])
                    log.flush()
                elif not self.log_truncated:
                    self.log_truncated = True
                    log.write(f"\n[log capped at {self._max_log_bytes} bytes; further output dropped]\n".encode())
                    log.flush()
                self._tail.append(chunk)
                self._tail_size += len(chunk)
                while self._tail_size - len(self._tail[0]) >= TAIL_BYTES:
                    self._tail_size -= len(self._tail.popleft())


def start(
    argv: list[str],
    *,
    cwd: Path,
    log_path: Path,
    env_extra: dict[str, str] | None = None,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    env: dict[str, str] | None = None,
) -> RunningProcess:
    """Start a long-lived process (a worker); the caller owns killing it.

    `env` replaces the allow-listed environment entirely (confined processes get one made for them).
    """
    return RunningProcess(argv, cwd=cwd, log_path=log_path, env=env if env is not None else child_env(env_extra), max_log_bytes=max_log_bytes)


def run(
    argv: list[str],
    *,
    cwd: Path,
    log_path: Path,
    timeout_s: float,
    env_extra: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
    on_poll: Callable[[], None] | None = None,
    max_log_bytes: int = DEFAULT_MAX_LOG_BYTES,
    env: dict[str, str] | None = None,
) -> ProcessResult:
    """Run to completion, killing the process group on timeout or when `cancel` (default: the current tool call's) is set."""
    cancel = call_scope.cancel_event(cancel)
    process = start(argv, cwd=cwd, log_path=log_path, env_extra=env_extra, max_log_bytes=max_log_bytes, env=env)
    deadline = process.started + timeout_s
    timed_out = cancelled = False
    while process.alive():
        if cancel is not None and cancel.is_set():
            cancelled = True
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        if on_poll is not None:
            on_poll()
        try:
            process.popen.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
    # Kill the group even after a clean exit: nothing the child started may outlive it.
    process.kill()
    process.finish_output()
    return ProcessResult(
        returncode=None if (timed_out or cancelled) else process.popen.returncode,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=round(time.monotonic() - process.started, 3),
        log_path=log_path,
        output_bytes=process.output_bytes,
        log_truncated=process.log_truncated,
        tail=process.tail(),
    )
