"""Snapshots of a workspace, and long calls run in the background."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from aether_mcp import background_runs, strict_wire
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tool_registry.tool_calls import SnapshotIdArg, WorkspaceArg, tool_annotations
from aether_mcp.tools import (
    snapshots,
)

# the tools start_run takes: those that run tests, Spark or generated data and can take minutes
BACKGROUND_TOOLS = (
    "scan_project", "draft_project", "record_cases", "run_tests", "coverage_report", "mutation_score", "suggest_inputs", "audit_tests", "byte_compare", "audit_candidate",
    "generate_data", "run_benchmark", "validate_on_data", "tune_arrow_batch", "micro_benchmark", "nsys_profile", "try_optimization",
)


def register(server: MCPServer, sandbox: SandboxRoot, pool: WorkerPool, runs: background_runs.BackgroundRuns) -> None:
    @server.tool(
        name="snapshot",
        title="Snapshot the agent's files",
        annotations=tool_annotations(read_only=False),
        description=(
            "Records every editable file (tests, candidates, notes; never protected files) under a label in the "
            "workspace's own store under .aether/ (no git involved). Returns the snapshot_id for revert and diff."
        ),
    )
    def snapshot(workspace: WorkspaceArg, label: Annotated[str, Field(description="what this state is, up to 200 characters")]) -> snapshots.SnapshotResult:
        return snapshots.snapshot(sandbox, workspace, label)

    @server.tool(
        name="list_snapshots",
        title="List snapshots",
        annotations=tool_annotations(read_only=True, idempotent=True),
        description="Read-only. Lists the workspace's snapshots (id, label, time, file count), oldest first; snapshot 0 is the workspace as created.",
    )
    def list_snapshots(workspace: WorkspaceArg) -> snapshots.ListSnapshotsResult:
        return snapshots.list_snapshots(sandbox, workspace)

    @server.tool(
        name="diff",
        title="Diff two snapshots",
        annotations=tool_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only. Unified diff of the editable files between snapshot `from_id` and snapshot `to_id` "
            "(omit to_id to compare with the current files), with added/removed/modified lists and changed lines per file; "
            "one page (at most 60,000 bytes as sent) from `offset`, of one file's diff with `path`; `next_offset` and `more` while more follows."
        ),
    )
    def diff(
        workspace: WorkspaceArg,
        from_id: SnapshotIdArg,
        to_id: Annotated[int | None, Field(ge=0, description="a later snapshot id; omit for the current files")] = None,
        path: Annotated[str | None, Field(description="only this file's diff")] = None,
        offset: Annotated[int, Field(ge=0, description="character offset to start at: a page's next_offset")] = 0,
    ) -> snapshots.DiffResult:
        return snapshots.diff(sandbox, workspace, from_id, to_id, path, offset)

    @server.tool(
        name="revert",
        title="Revert the agent's files to a snapshot",
        annotations=tool_annotations(read_only=False, destructive=True, idempotent=True),
        description=(
            "Restores every editable file to its content in the snapshot, byte for byte, and deletes editable "
            "files created after it; protected files are never touched. The files being replaced are first "
            "saved as a new snapshot (backup_snapshot_id), so a revert can itself be undone."
        ),
    )
    def revert(workspace: WorkspaceArg, snapshot_id: SnapshotIdArg) -> snapshots.RevertResult:
        return snapshots.revert(sandbox, workspace, snapshot_id)

    @server.tool(
        name="start_run",
        title="Start a long tool call in the background",
        annotations=tool_annotations(read_only=False, open_world=True),
        description=(
            f"For work longer than a host waits for: starts `tool` ({', '.join(BACKGROUND_TOOLS)}) with `arguments` as a direct "
            "call takes them (checked now) and returns "
            "a run_id at once. Then run_status(run_id, wait_s) for progress and, when it ends, the tool's result; "
            "cancel_run(run_id) stops it and its processes. Runs end with the server process."
        ),
    )
    async def start_run(
        tool: Annotated[str, Field(description="the tool to run")],
        arguments: Annotated[dict[str, Any], Field(description="its arguments, as for a direct call")],
    ) -> background_runs.RunStarted:
        registered = server._tool_manager.get_tool(tool)
        if registered is None or tool not in BACKGROUND_TOOLS:
            raise ToolError(f"start_run takes one of {', '.join(BACKGROUND_TOOLS)}, not {tool!r}; call other tools directly.")
        try:
            registered.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(strict_wire.argument_errors(registered, exc)) from None
        run = runs.start(tool, arguments, partial(server.call_tool, tool, dict(arguments)))
        return background_runs.RunStarted(run_id=run.run_id, tool=tool, status=run.status, next=f"run_status({run.run_id!r}, wait_s=30)")

    @server.tool(
        name="run_status",
        title="Progress and result of a background run",
        annotations=tool_annotations(read_only=True, idempotent=True),
        description=(
            "Returns a run's status (running, succeeded, failed, cancelled), its latest progress, and once it ends the "
            "tool's structured result or its error. `wait_s` waits up to that long for the run to end first."
        ),
    )
    async def run_status(
        run_id: Annotated[str, Field(description="the run_id from start_run")],
        wait_s: Annotated[float, Field(ge=0, le=background_runs.MAX_WAIT_S, description="seconds to wait for the run to end")] = 0,
    ) -> background_runs.RunStatus:
        return await anyio.to_thread.run_sync(runs.wait, run_id, wait_s, abandon_on_cancel=True)

    @server.tool(
        name="cancel_run",
        title="Stop a background run",
        annotations=tool_annotations(read_only=False, idempotent=True),
        description="Stops a background run and every process it started (waits up to 30 s for them to end); returns its status.",
    )
    async def cancel_run(run_id: Annotated[str, Field(description="the run_id from start_run")]) -> background_runs.RunStatus:
        return await anyio.to_thread.run_sync(runs.cancel, run_id, abandon_on_cancel=True)
