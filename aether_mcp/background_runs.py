"""Background runs: a long tool call started now, polled later, so no call has to outlast a host's patience.

`start_run(tool, arguments)` validates the call as the tool would, starts it on a thread of its own and
returns a run id at once; `run_status(run_id)` returns its progress and, once it ends, the tool's
structured result or its error; `cancel_run(run_id)` stops it and every process it started. A run
does exactly what the blocking call does (same checks, same records under .aether/); runs are held
by the server process, so they end with it.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import paging

MAX_RUNNING = 3  # runs share the Spark workers and the machine's cores
MAX_KEPT = 100  # finished runs kept for run_status, newest first
MAX_WAIT_S = 60

Status = Literal["running", "succeeded", "failed", "cancelled"]


class RunProgress(BaseModel):
    done: float
    total: float | None
    message: str


class RunStarted(BaseModel):
    run_id: str
    tool: str
    status: Status
    next: str = Field(description="how to follow the run")


class RunStatus(BaseModel):
    run_id: str
    tool: str
    arguments: dict[str, Any] = Field(description="the arguments the run was started with; one longer than 400 bytes is described in place of its value")
    status: Status
    progress: RunProgress | None = Field(description="the latest progress the tool reported")
    elapsed_s: float = Field(description="timing: seconds since the run started (until it ended)")
    result: dict[str, Any] | None = Field(description="the tool's structured result, once succeeded")
    error: str | None = Field(description="why it failed or was cancelled")


@dataclass
class Run:
    run_id: str
    tool: str
    arguments: dict[str, Any]
    started: float = field(default_factory=time.monotonic)
    status: Status = "running"
    progress: RunProgress | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    ended: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    cancel_requested: bool = False
    finished: threading.Event = field(default_factory=threading.Event)

    def report(self, done: float, total: float | None, message: str) -> None:
        self.progress = RunProgress(done=done, total=total, message=message)

    def status_view(self) -> RunStatus:
        end = self.ended if self.ended is not None else time.monotonic()
        return RunStatus(
            run_id=self.run_id, tool=self.tool, arguments=paging.abridged(self.arguments), status=self.status, progress=self.progress,
            elapsed_s=round(end - self.started, 3), result=self.result, error=None if self.error is None else paging.clip(self.error, 8_000),
        )


_current: ContextVar[Run | None] = ContextVar("aether_background_run", default=None)


def current() -> Run | None:
    """The background run this code runs in, or None for a plain call."""
    return _current.get()


class BackgroundRuns:
    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self._lock = threading.Lock()

    def start(self, tool: str, arguments: dict[str, Any], call: Callable[[], Awaitable[Any]]) -> Run:
        """Start `call` (the tool call, as a coroutine function) on a thread with its own event loop."""
        with self._lock:
            running = [run for run in self._runs.values() if run.status == "running"]
            if len(running) >= MAX_RUNNING:
                raise ToolError(
                    f"{len(running)} runs are still running ({', '.join(f'{r.run_id} {r.tool}' for r in running)}); "
                    "wait for one with run_status(run_id, wait_s=60) or stop one with cancel_run(run_id)."
                )
            run = Run(run_id=f"run-{secrets.token_hex(4)}", tool=tool, arguments=arguments)
            self._runs[run.run_id] = run
            finished = [r for r in self._runs.values() if r.status != "running"]
            for old in sorted(finished, key=lambda r: r.started)[: max(0, len(finished) - MAX_KEPT)]:
                del self._runs[old.run_id]
        threading.Thread(target=self._execute, args=(run, call), name=f"aether-{run.run_id}", daemon=True).start()
        return run

    def _execute(self, run: Run, call: Callable[[], Awaitable[Any]]) -> None:
        token = _current.set(run)
        try:
            outcome = anyio.run(call)
            if getattr(outcome, "is_error", False):
                run.error = " ".join(getattr(block, "text", "") for block in outcome.content).strip()
                run.status = "cancelled" if run.cancel_requested else "failed"
            else:
                run.result = getattr(outcome, "structured_content", None)
                run.status = "succeeded"
        except BaseException as exc:  # noqa: BLE001  (the run records any failure; the server stays up)
            run.error = str(exc) or type(exc).__name__
            run.status = "cancelled" if run.cancel_requested else "failed"
        finally:
            if run.status == "cancelled" and not run.error:
                run.error = "cancelled by cancel_run"
            run.ended = time.monotonic()
            _current.reset(token)
            run.finished.set()

    def get(self, run_id: str) -> Run:
        with self._lock:
            run = self._runs.get(run_id)
            known = sorted(self._runs, key=lambda key: self._runs[key].started, reverse=True)[:10]
        if run is None:
            raise ToolError(
                f"no run {run_id!r} in this server process (runs end with the server; the tools' own records stay in the "
                f"workspace). Known runs: {', '.join(known) or 'none'}."
            )
        return run

    def wait(self, run_id: str, wait_s: float) -> RunStatus:
        run = self.get(run_id)
        run.finished.wait(max(0.0, min(wait_s, MAX_WAIT_S)))
        return run.status_view()

    def cancel(self, run_id: str, wait_s: float = 30.0) -> RunStatus:
        run = self.get(run_id)
        if run.status == "running":
            run.cancel_requested = True
            run.cancel.set()
            run.finished.wait(wait_s)
        return run.status_view()

    def stop_all(self) -> None:
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            if run.status == "running":
                run.cancel_requested = True
                run.cancel.set()
