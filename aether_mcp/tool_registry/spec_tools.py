"""Phase 1: recording cases, running tests, measuring and freezing the specification."""

from __future__ import annotations

from functools import partial
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from aether_mcp import background_runs
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tool_registry.tool_calls import BackendArg, JsonCell, WorkspaceArg, in_thread, scoped_call, tool_annotations
from aether_mcp.tools import (
    case_recording,
    freezing,
    spec_strength,
    suite_audit,
    suite_runs,
)


def register(server: MCPServer, sandbox: SandboxRoot, pool: WorkerPool, runs: background_runs.BackgroundRuns) -> None:
    @server.tool(
        name="record_cases",
        title="Record the original's real outputs as behaviour cases",
        annotations=tool_annotations(read_only=False),
        description=(
            "Constraints: `inputs` is 1..1000 argument rows in UDF order, JSON values read by the declared types (floats may be "
            "\"NaN\", \"Infinity\", \"-0.0\"; dates \"YYYY-MM-DD\"; timestamps ISO 8601; binary {\"hex\": \"..\"}; structs objects "
            "by field; maps objects or [key, value] pairs); refused while the tests are frozen. Runs the original on them through "
            "Spark and appends them to tests/cases.py with its output as `expected`, or what it raised as `raises`; known rows skipped."
        ),
    )
    async def record_cases(
        workspace: WorkspaceArg,
        ctx: Context,
        inputs: Annotated[list[list[JsonCell]], Field(min_length=1, max_length=1000, description="argument rows, e.g. [[65, 100.0, \"gold\"], [null, \"NaN\", \" gold\"]]")],
        why: Annotated[str | None, Field(description="what these rows pin, one line")] = None,
    ) -> case_recording.RecordCasesResult:
        return await in_thread(ctx, scoped_call(case_recording.record_cases, sandbox, pool, workspace, inputs, why))

    @server.tool(
        name="run_tests",
        title="Run the workspace's tests against a target through Spark",
        annotations=tool_annotations(read_only=True, idempotent=True),
        description=(
            "Constraints: `target` is 'original' or 'candidate:<name>'; needs tests/test_*.py; killed after `timeout_s` "
            "(default aether.toml's, 300 s). Runs pytest in a sandboxed process with the fixture `udf_under_test(rows)` bound to "
            "the target, evaluating rows through a real SparkSession. Returns counts, each test's outcome with a capped message, "
            "the log's path and the backend (`simulated` for a kernel on CPU). Cancellable."
        ),
    )
    async def run_tests(
        workspace: WorkspaceArg,
        target: Annotated[str, Field(description="'original' or 'candidate:<name>'")],
        ctx: Context,
        timeout_s: Annotated[int | None, Field(ge=1, le=3600, description="hard limit for the whole run, in seconds")] = None,
        backend: BackendArg = None,
    ) -> suite_runs.RunTestsResult:
        return await in_thread(ctx, partial(suite_runs.run_tests, sandbox, pool, workspace, target, timeout_s=timeout_s, backend=backend))

    @server.tool(
        name="coverage_report",
        title="Line and branch coverage of the original under the cases",
        annotations=tool_annotations(read_only=True, idempotent=True),
        description=(
            "Constraints: needs cases in tests/cases.py and Java 17+. Measures line and branch coverage of "
            "original/udf.py (the UDF and its helpers) with coverage.py while the original runs on every case, its "
            "arguments exactly as Spark delivers them. Returns line_percent, branch_percent, up to 100 uncovered lines or "
            "branches (line, source, missed destination; unjustified first, the rest counted and in record_path) and the gate (default: every line and branch covered or "
            "justified). Next: suggest_inputs, record_cases, or justify."
        ),
    )
    async def coverage_report(workspace: WorkspaceArg, ctx: Context) -> spec_strength.CoverageReport:
        return await in_thread(ctx, scoped_call(spec_strength.coverage_report, sandbox, pool, workspace))

    @server.tool(
        name="mutation_score",
        title="How many plausible bugs the cases catch",
        annotations=tool_annotations(read_only=True, idempotent=True),
        description=(
            "Constraints: needs cases in tests/cases.py and Java 17+. Generates mutants of original/udf.py "
            "(comparison operators and boundaries, arithmetic, constants +/-1 and 0, negated conditions, and/or, "
            "return None, removed if bodies, changed string literals) and runs every case against each as plain "
            "Python on the arguments as Spark delivers them: a mutant is killed when an output differs from the "
            "original's. Returns total, killed, score and up to 100 survivors (the rest counted and in record_path), each with a unified diff, its line and "
            "whether generated inputs could tell it apart at all (likely_equivalent). Gate: score >= 0.8 or every "
            "survivor justified."
        ),
    )
    async def mutation_score(workspace: WorkspaceArg, ctx: Context) -> spec_strength.MutationScore:
        return await in_thread(ctx, scoped_call(spec_strength.mutation_score, sandbox, pool, workspace))

    @server.tool(
        name="suggest_inputs",
        title="Input rows that close coverage and mutation gaps",
        annotations=tool_annotations(read_only=True, idempotent=False),  # suggests; record_cases is what writes
        description=(
            "Constraints: needs cases in tests/cases.py and Java 17+ (runs coverage_report and mutation_score when "
            "their results are stale). Returns argument rows in record_cases form, each with what it targets: an "
            "uncovered line or branch, a surviving mutant it kills, a mined boundary (65 gives 64, 65, 66), a string "
            "literal with perturbations, an argument set to null. Pass the ones you want to record_cases."
        ),
    )
    async def suggest_inputs(workspace: WorkspaceArg, ctx: Context) -> spec_strength.SuggestInputsResult:
        return await in_thread(ctx, scoped_call(spec_strength.suggest_inputs, sandbox, pool, workspace))

    @server.tool(
        name="audit_tests",
        title="Review the tests for patterns that pin nothing",
        annotations=tool_annotations(read_only=True, idempotent=True),
        description=(
            "Static review of tests/test_*.py (never run in the server) and tests/cases.py: tests without "
            "assertions, only weak assertions (non-null, row counts, types), skip/xfail, try/except that swallows "
            "failures, float tolerances wider than the exact policy, tests that never call udf_under_test, "
            "duplicated cases. Dynamic: runs the suite against canaries (null and fixed values for every row) and "
            "flags tests that still pass. Returns up to 50 findings (the rest counted and in record_path) with file, line, test, why it matters and the fix."
        ),
    )
    async def audit_tests(workspace: WorkspaceArg, ctx: Context) -> suite_audit.AuditTestsResult:
        return await in_thread(ctx, scoped_call(suite_audit.audit_tests, sandbox, pool, workspace))

    @server.tool(
        name="justify",
        title="Record why an uncovered branch or surviving mutant is acceptable",
        annotations=tool_annotations(read_only=False, idempotent=True),
        description=(
            "Constraints: `item` is an open item of the latest coverage_report or mutation_score: 'line:N', "
            "'branch:A->B' (B may be 'exit') or 'mutant:<id>'; `reason` at least 15 characters (unreachable because, "
            "equivalent because). The reason counts toward the gates and is shown by workspace_status and the report."
        ),
    )
    def justify(
        workspace: WorkspaceArg,
        item: Annotated[str, Field(description="line:N, branch:A->B or mutant:<id>")],
        reason: Annotated[str, Field(description="why it is acceptable")],
    ) -> spec_strength.JustifyResult:
        return spec_strength.justify(sandbox, workspace, item, reason)

    @server.tool(
        name="freeze_tests",
        title="Freeze the tests once the phase-1 gates hold",
        annotations=tool_annotations(read_only=False),
        description=(
            "Constraints: refused until tests pass on the original, the coverage gate and the mutation gate hold on "
            "the current files. Records the hashes of every file under tests/ and the number of cases; from then on "
            "run_tests on candidates and byte_compare refuse while the tests differ, and record_cases is refused, "
            "until unfreeze_tests(workspace, reason), which is logged."
        ),
    )
    def freeze_tests(workspace: WorkspaceArg) -> freezing.FreezeResult:
        return freezing.freeze_tests(sandbox, workspace)

    @server.tool(
        name="unfreeze_tests",
        title="Unfreeze the tests, with a logged reason",
        annotations=tool_annotations(read_only=False),
        description=(
            "Constraints: the tests must be frozen; `reason` at least 15 characters. Lifts the freeze and logs the "
            "reason with the files changed since the freeze; the log is shown by workspace_status and the report, so "
            "weakening tests to make a candidate pass is never silent."
        ),
    )
    def unfreeze_tests(workspace: WorkspaceArg, reason: Annotated[str, Field(description="why the frozen tests must change")]) -> freezing.UnfreezeResult:
        return freezing.unfreeze_tests(sandbox, workspace, reason)
