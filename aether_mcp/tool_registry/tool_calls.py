"""How a registered tool is declared and called: its argument types and annotations, and running a long tool in a
thread with progress and cancellation."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from aether_mcp import background_runs, call_scope
from aether_mcp.progress_report import Monotonic

T = TypeVar("T")
WorkspaceArg = Annotated[str, Field(description="the path init_workspace gave")]
BackendArg = Annotated[
    Literal["auto", "cpu", "gpu"] | None,
    Field(
        description="where vectorized/kernel candidates run: cpu (kernels simulated), gpu, auto (a GPU if usable); default aether.toml's [backend] use"
    ),
]
CandidateArg = Annotated[str, Field(description="<name> of candidate/<name>.py")]
# one argument value in a case row: any JSON value (a string such as "NaN" or "-0.0" for special floats)
JsonCell = Annotated[
    Any, WithJsonSchema({"anyOf": [{"type": "null"}, {"type": "boolean"}, {"type": "number"}, {"type": "string"}, {"type": "array"}, {"type": "object"}]})
]
SnapshotIdArg = Annotated[int, Field(ge=0, description="a snapshot id from snapshot or list_snapshots")]


def tool_annotations(*, read_only: bool, destructive: bool = False, idempotent: bool = False, open_world: bool = False) -> ToolAnnotations:
    """`open_world`: the call may reach other machines (a spark:// or sc:// master, a data URI, or aether.toml's [benchmark] master)."""
    return ToolAnnotations(
        readOnlyHint=read_only,
        destructiveHint=None if read_only else destructive,
        idempotentHint=idempotent,
        openWorldHint=open_world,
    )


HEARTBEAT_S = 4.0  # a long call sends a note at least this often, repeating its latest step while it runs


async def in_thread(ctx: Context, call: Callable[..., T]) -> T:
    """Run a long tool in a worker thread with progress reporting; cancelling the call stops its work.

    `call` takes `cancel` and `progress` keywords. In a background run, progress goes to the run and
    cancel_run sets the cancel event. Every process the call starts below sees the same event
    (`call_scope`), so cancelling ends all of them. While the call runs, a note goes out at least
    every HEARTBEAT_S seconds: the latest step, and how long it has been running.
    """
    run = background_runs.current()
    cancel = run.cancel if run is not None else threading.Event()
    token = anyio.lowlevel.current_token()

    def send(done: float, total: float | None, message: str) -> None:
        if run is not None:
            run.report(done, total, message)
            return
        with contextlib.suppress(Exception):  # a client that went away must not fail the run
            anyio.from_thread.run(partial(ctx.report_progress, done, total, message), token=token)

    progress = Monotonic(send)
    stop = threading.Event()
    threading.Thread(target=progress.keep_alive, args=(stop, HEARTBEAT_S), name="aether-progress", daemon=True).start()

    def work() -> T:
        with call_scope.scope(cancel, progress):
            return call(cancel=cancel, progress=progress)

    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    finally:
        stop.set()
        with anyio.CancelScope(shield=True):  # no note may follow the result
            await anyio.to_thread.run_sync(progress.close)
        if run is None:  # a run's event belongs to cancel_run
            cancel.set()


def scoped_call(function: Callable[..., T], *args: Any) -> Callable[..., T]:
    """A tool function without cancel/progress parameters, run under the call's scope (which carries both)."""

    def call(*, cancel: threading.Event, progress: Callable[[float, float | None, str], None]) -> T:
        return function(*args)

    return call


