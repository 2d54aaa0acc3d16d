"""Phase 2: proving a candidate equal and auditing it, and declared deviations."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from aether_mcp import background_runs, paging
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tool_registry.tool_calls import BackendArg, CandidateArg, T, WorkspaceArg, in_thread, tool_annotations
from aether_mcp.tools import (
    byte_compare,
    cheat_audit,
    deviation_records,
    drafting,
    project_drafts,
)


def register(server: MCPServer, sandbox: SandboxRoot, pool: WorkerPool, runs: background_runs.BackgroundRuns) -> None:
    @server.tool(
        name="draft_candidate",
        title="Draft a sql candidate",
        annotations=tool_annotations(read_only=False),
        description=(
            "Writes a new candidate/<name>.py: a sql candidate translated from original/udf.py (never run) with Python's "
            "semantics (None, rounding, NaN, raises). Outside the subset: `drafted: false`, the construct, its line, what to do; "
            "nothing written. byte_compare judges it."
        ),
    )
    def draft_candidate(
        workspace: WorkspaceArg,
        target: Literal["sql"] = "sql",
        name: Annotated[str, Field(description="new file candidate/<name>.py")] = "draft",
    ) -> drafting.DraftCandidateResult:
        return drafting.draft_candidate(sandbox, workspace, target, name)

    @server.tool(
        name="draft_project",
        title="Draft and judge every draftable UDF of a project",
        annotations=tool_annotations(read_only=False),
        description=(
            "Each UDF under `path` that scan_project finds draftable: a workspace under `into`, draft_candidate, byte_compare. "
            "Returns each outcome and how many convert automatically, proven equal. Long: use start_run."
        ),
    )
    async def draft_project(
        ctx: Context,
        path: Annotated[str, Field(description="folder under the server root")] = ".",
        into: Annotated[str, Field(description="folder for the workspaces")] = "aether_workspaces/drafts",
        hidden_rows: Annotated[int, Field(ge=1_000, le=200_000)] = 2_000,
    ) -> project_drafts.DraftProjectResult:
        return await in_thread(ctx, partial(project_drafts.draft_project, sandbox, pool, path, into, hidden_rows))

    @server.tool(
        name="byte_compare",
        title="Prove a candidate equal to the original as Spark runs it",
        annotations=tool_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: `candidate` names candidate/<name>.py. Runs the original and the candidate (confined, batch shape drawn "
            "per call) on every case, an edge corpus of the argument types, and hidden rows from a "
            "fresh secret seed around the original's constants and literals; compares every output in the server exactly (null only "
            "null, NaN only NaN, -0.0 is not 0.0, floats bit for bit, types must match). Returns `equal`, per-source counts, the first "
            "mismatches (hidden ones shrunk), what the original raised on, the policy, `backend`, `simulated` (a kernel under the "
            "CUDA simulator), `gpu_verified` (device counters saw the work), `confined` and `watch_events`. Reports progress; cancellable."
        ),
    )
    async def byte_compare_tool(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        ctx: Context,
        hidden_rows: Annotated[int, Field(ge=0, le=200_000, description="how many hidden rows to generate")] = 20_000,
        backend: BackendArg = None,
    ) -> byte_compare.ByteCompareResult:
        return _shown(await in_thread(ctx, partial(byte_compare.byte_compare, sandbox, pool, workspace, candidate, hidden_rows, backend=backend)))

    @server.tool(
        name="audit_candidate",
        title="Audit a candidate for cheats, with a fresh comparison",
        annotations=tool_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: `candidate` names candidate/<name>.py; the workspace intact, its tests (if frozen) as recorded. "
            "A deterministic judge: static rules over the candidate and the modules it imports (reaching the original, row-at-a-time "
            "work, host round trips, hard-coded test data, forbidden reads, tampering, threads/processes/JVM calls, memoization, "
            "imports off the allow-list), watched runs in the confined candidate worker (tripwire original, audit-hook events, Python "
            "steps at 1,000 vs 20,000 rows, the sql plan, outputs compared, nothing left running) and a fresh byte_compare. "
            "Returns `verdict` PASS, PASS (unconfined) or FAIL with `reasons`, up to 50 `findings` (blocking first; all in result_path), "
            "the comparison summary, the backend and `confinement`. On the GPU, no kernel seen or mid-run host copies block. "
            "Cancellable."
        ),
    )
    async def audit_candidate(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        ctx: Context,
        hidden_rows: Annotated[int, Field(ge=1000, le=200_000, description="hidden rows for the fresh comparison")] = 20_000,
        backend: BackendArg = None,
    ) -> cheat_audit.AuditCandidateResult:
        return _shown(await in_thread(ctx, partial(cheat_audit.audit_candidate, sandbox, pool, workspace, candidate, hidden_rows, backend=backend)))

    @server.tool(
        name="record_deviation",
        title="Declare a behaviour difference of a candidate",
        annotations=tool_annotations(read_only=False),
        description=(
            "Constraints: `summary` and `reason` at least 10 characters; give `ulp_tolerance` (floats this many ULPs apart are "
            "equal), `applies_to` (a predicate over the argument names, e.g. \"amount is not None and amount < 0\": comparisons, "
            "and/or/not, arithmetic, abs/len/min/max/round/isnan/isinf and string methods such as strip/lower), or both (the "
            "tolerance on those rows only); `applies_to` alone puts those rows out of scope. `returns_where_original_raises`: "
            "where the original raises, the candidate may return a value. Relaxes comparisons exactly as declared; later "
            "results list it."
        ),
    )
    def record_deviation(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        summary: Annotated[str, Field(description="what differs, e.g. 'sin() results within 2 ULP'")],
        reason: Annotated[str, Field(description="why the difference is acceptable for the pipeline")],
        applies_to: Annotated[str | None, Field(description="predicate over the arguments selecting the rows it covers; omit for every row")] = None,
        ulp_tolerance: Annotated[int | None, Field(ge=1, le=1_000_000, description="floats this many ULPs apart count as equal")] = None,
        returns_where_original_raises: Annotated[bool, Field(description="where the original raises, the candidate may return a value (a job that would have failed writes it)")] = False,
    ) -> deviation_records.DeviationsResult:
        return deviation_records.record_deviation(sandbox, workspace, candidate, summary, reason, applies_to, ulp_tolerance, returns_where_original_raises)

    @server.tool(
        name="remove_deviation",
        title="Remove a recorded deviation",
        annotations=tool_annotations(read_only=False, destructive=True),
        description="Removes one deviation (by the deviation_id record_deviation returned); later comparisons are exact again there. Returns the deviations left.",
    )
    def remove_deviation(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        deviation_id: Annotated[str, Field(description="e.g. dev-1")],
    ) -> deviation_records.DeviationsResult:
        return deviation_records.remove_deviation(sandbox, workspace, candidate, deviation_id)


# Fields that show a row's values, what the targets returned or raised, or what the watch saw: clipped
# in results (the records under .aether/ keep them whole), so a long value cannot swell a result.
SHOWN_FIELDS = frozenset({"args", "shrunk_from", "expected", "actual", "detail", "original_raised", "candidate", "error", "evidence", "declared_deviations", "reasons"})


def _shown(result: T) -> T:
    data = paging.clip_fields(result.model_dump(), SHOWN_FIELDS)
    if isinstance(data.get("reasons"), list):  # an audit's reasons: one per blocking finding, however many
        reasons, left_out = paging.fit(data["reasons"], limit=50, budget=paging.LIST_BYTES)
        data["reasons"] = reasons + ([f"and {left_out:,} more (result_path lists them all)"] if left_out else [])
    return type(result).model_validate(data)
