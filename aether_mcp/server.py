"""The MCP layer, and only that: tool registration, titles, annotations, descriptions, errors.

Every tool is a plain function in `aether_mcp.tools`; this module binds them to one server root
and one worker pool. Tools are registered in a fixed order, which is the order of `tools/list`.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError, WithJsonSchema

from aether_mcp import __version__, artifact_links, background_runs, call_scope, prompts, strict_wire
from aether_mcp.bench_data import GenerateDataResult
from aether_mcp.path_guard import SandboxRoot, root_problem
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.progress_report import Monotonic
from aether_mcp.tools import (
    benchmarking,
    byte_compare,
    case_recording,
    cheat_audit,
    conversion_report,
    data_validation,
    deviation_records,
    files,
    freezing,
    job_conversion,
    optimization,
    profiling,
    project_scan,
    snapshots,
    spec_strength,
    suite_audit,
    suite_runs,
    workspaces,
)
from aether_mcp.workspace import SparkConfig
from aether_mcp.workspace.derivation import DEFAULT_SPARK_CONF

INSTRUCTIONS = """\
aether-mcp converts a PySpark Python UDF into a faster equivalent (Spark SQL, vectorized
pandas/NumPy that also runs on cuDF/CuPy, or a CUDA kernel) and proves the two equal as Spark runs
them. scan_project ranks a project's UDFs. Four phases, each gated:
1. Specify: init_workspace(source, udf) -> record_cases / write tests/cases.py -> run_tests(ws,
   "original") -> coverage_report, mutation_score (suggest_inputs, justify) -> audit_tests ->
   freeze_tests. Gate: tests pass on the original, every line and branch covered or justified,
   mutation score >= 0.8.
2. Convert: write candidate/<name>.py (TARGET "sql" with build(*cols), or "vectorized"/"kernel"
   with evaluate(*series); `from aether_mcp.backend import xp, array, series` serves CPU and GPU)
   -> run_tests(ws, "candidate:<name>") -> byte_compare -> audit_candidate. Gate: PASS (no cheat
   finding and a fresh exact comparison on hidden rows). A kernel on the CPU is simulated
   (correctness only).
3. Benchmark: run_benchmark (original vs candidate vs no-UDF floor, speedup with a 95% CI).
4. Optimize: nsys_profile (nsys, Python profiler, or sql's Spark plan) ->
   try_optimization(ws, name, label): the first call records the best; later calls keep a change
   only if clean, equal and faster over the whole interval, else restore the best. Stop after 10
   steps or 3 rejections in a row. Then report(ws): what to ship and its wiring.
Then validate_on_data(ws, name, data) on real data, apply_conversion(ws, name).
Rules: never weaken frozen tests (unfreeze_tests is logged); declare unavoidable differences with
record_deviation; snapshot/revert/diff keep work safe; workspace_status: where a ws stands.
Prompts: convert_udf and one per phase. Resources: aether://notes/{semantic-traps,
spark-functions,gpu-idioms}, aether://workspaces/{name}/report, aether://schemas/{tool} (results),
logs and charts (as resource_links).
Long calls: start_run(tool, arguments) -> run_id at once; run_status(run_id, wait_s), cancel_run.
Only files inside the server root can be used."""

T = TypeVar("T")
WorkspaceArg = Annotated[str, Field(description="workspace path from init_workspace")]
BackendArg = Annotated[
    Literal["auto", "cpu", "gpu"] | None,
    Field(
        description="where vectorized/kernel candidates run: cpu (kernels simulated), gpu, auto (the GPU where one can run them); default aether.toml's [backend] use"
    ),
]
CandidateArg = Annotated[str, Field(description="candidate name: the file candidate/<name>.py")]
# one argument value in a case row: any JSON value (a string such as "NaN" or "-0.0" for special floats)
JsonCell = Annotated[
    Any, WithJsonSchema({"anyOf": [{"type": "null"}, {"type": "boolean"}, {"type": "number"}, {"type": "string"}, {"type": "array"}, {"type": "object"}]})
]
SnapshotIdArg = Annotated[int, Field(ge=0, description="a snapshot id from snapshot or list_snapshots")]


def _annotations(*, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        readOnlyHint=read_only,
        destructiveHint=None if read_only else destructive,
        idempotentHint=idempotent,
        openWorldHint=False,
    )


async def _in_thread(ctx: Context, call: Callable[..., T]) -> T:
    """Run a long tool in a worker thread with progress reporting; cancelling the call stops its work.

    `call` takes `cancel` and `progress` keywords. In a background run, progress goes to the run and
    cancel_run sets the cancel event. Every process the call starts below sees the same event
    (`call_scope`), so cancelling ends all of them.
    """
    run = background_runs.current()
    cancel = run.cancel if run is not None else threading.Event()

    def send(done: float, total: float | None, message: str) -> None:
        if run is not None:
            run.report(done, total, message)
            return
        with contextlib.suppress(Exception):  # a client that went away must not fail the run
            anyio.from_thread.run(partial(ctx.report_progress, done, total, message))

    progress = Monotonic(send)

    def work() -> T:
        with call_scope.scope(cancel, progress):
            return call(cancel=cancel, progress=progress)

    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    finally:
        if run is None:  # a run's event belongs to cancel_run
            cancel.set()


def _scoped(function: Callable[..., T], *args: Any) -> Callable[..., T]:
    """A tool function without cancel/progress parameters, run under the call's scope (which carries both)."""

    def call(*, cancel: threading.Event, progress: Callable[[float, float | None, str], None]) -> T:
        return function(*args)

    return call


# the tools start_run takes: those that run tests, Spark or generated data and can take minutes
BACKGROUND_TOOLS = (
    "scan_project", "record_cases", "run_tests", "coverage_report", "mutation_score", "suggest_inputs", "audit_tests", "byte_compare", "audit_candidate",
    "generate_data", "run_benchmark", "validate_on_data", "tune_arrow_batch", "micro_benchmark", "nsys_profile", "try_optimization",
)
WARM_START_ENV = "AETHER_MCP_WARM_START"  # "0": start the Spark workers on first use only


def build_server(root: str, *, workers: WorkerPool | None = None, warm_start: bool | None = None) -> MCPServer:
    """An MCP server whose tools can reach only files inside `root`.

    With `warm_start` (default: on unless AETHER_MCP_WARM_START=0) the reference and candidate Spark
    workers for the default settings start in the background as the server starts.
    """
    problem = root_problem(root)
    if problem:
        raise ValueError(problem)
    sandbox = SandboxRoot(root)
    pool = workers or WorkerPool(forbidden=[sandbox.path])
    if warm_start is None:
        warm_start = os.environ.get(WARM_START_ENV, "1") != "0"

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        if warm_start:
            pool.warm_start(SparkConfig(conf=dict(DEFAULT_SPARK_CONF)))
        try:
            yield
        finally:
            runs.stop_all()
            if workers is None:  # a pool passed in belongs to the caller
                pool.close()

    runs = background_runs.BackgroundRuns()
    server = MCPServer(name="aether-mcp", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool(
        name="scan_project",
        title="Find every Python UDF in a project and rank what converting each would save",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only; never runs the job. Every UDF under folder `path` (all forms init_workspace takes) with file, line, form, "
            "argument types, call sites, whether init_workspace takes it (else its reason) and the call that opens it, the likely "
            "target, and the payoff: the function's cost per row timed on generated rows plus this machine's per-row cost of a "
            "Python UDF in Spark. Ranked, 25 a page (`offset`), summary first."
        ),
    )
    async def scan_project(
        ctx: Context,
        path: Annotated[str, Field(description="folder under the server root")] = ".",
        offset: Annotated[int, Field(ge=0, description="a page's next_offset")] = 0,
    ) -> project_scan.ScanProjectResult:
        return await _in_thread(ctx, _scoped(project_scan.scan_project, sandbox, path, offset))

    @server.tool(
        name="init_workspace",
        title="Create a conversion workspace for one UDF",
        annotations=_annotations(read_only=False),
        description=(
            "Constraints: `source` is a Python file inside the root, parsed, never run. `udf` names one UDF in it "
            "(@udf/@pandas_udf function, `name = udf(fn, type)`, a spark.udf.register name, or `name = factory(literals)`; "
            "`name:LINE` picks one of several). Argument types come from hints or `arg_types` ({\"amount\": \"double\"}), else refused. "
            "Arguments passed only as literals keep those values in generated rows unless named in `whole_domain`. `workspace` "
            "(default aether_workspaces/<udf>) must be new or empty.\n"
            "Extracts the UDF with the imports, constants and helpers it uses into original/udf.py (protected), freezes "
            "aether.toml, adds tests/ and candidate/ templates, takes snapshot 0. The extracted UDF first runs on 200 generated "
            "rows in a child: a failing import or a lost name is refused, nothing created. Returns the path, signature and `notes`."
        ),
    )
    def init_workspace(
        source: Annotated[str, Field(description="the PySpark job's .py file, relative to the server root")],
        udf: Annotated[str, Field(description="the UDF's name (or name:LINE)")],
        arg_types: Annotated[dict[str, str] | None, Field(description="Spark DDL type per argument name, e.g. {\"age\": \"int\"}")] = None,
        workspace: Annotated[str | None, Field(description="folder for the new workspace, inside the root")] = None,
        return_type: Annotated[str | None, Field(description="override the return type (Spark DDL), when the source's cannot be read")] = None,
        benchmark_master: Annotated[
            str | None, Field(description="Spark master for run_benchmark and tune_arrow_batch, e.g. spark://host:7077, frozen as [benchmark] master; default local[*]")
        ] = None,
        backend: Annotated[
            Literal["auto", "cpu", "gpu"], Field(description="where vectorized/kernel candidates run unless a call says otherwise, frozen as [backend] use; auto: the GPU where one can run them")
        ] = "auto",
        whole_domain: Annotated[list[str] | None, Field(description="arguments the job passes only as literals to draw over their whole type anyway, frozen in aether.toml")] = None,
    ) -> workspaces.InitWorkspaceResult:
        return workspaces.init_workspace(
            sandbox, source, udf, arg_types=arg_types, workspace=workspace, return_type=return_type, benchmark_master=benchmark_master, backend=backend,
            whole_domain=whole_domain,
        )

    @server.tool(
        name="workspace_status",
        title="Where a workspace stands",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only; works even on a workspace whose protected files were edited (it says what changed and "
            "how to recover). Returns the UDF contract, files (protected or editable), candidates, the number "
            "of cases, snapshots, the last test run per target, and the phase gates so far."
        ),
    )
    def workspace_status(workspace: WorkspaceArg) -> workspaces.WorkspaceStatusResult:
        return workspaces.workspace_status(sandbox, workspace)

    @server.tool(
        name="list_files",
        title="List workspace files",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only; confined to the workspace; symlinks are listed, never followed; .aether/ is server "
            "state (only its artifact folders runs/, bench/, profiles/, report/, validate/ can be listed). Lists files and folders under `path` (default: the whole "
            "workspace), each marked protected or not, 300 to a page with `next_offset` while more follow."
        ),
    )
    def list_files(
        workspace: WorkspaceArg,
        path: Annotated[str, Field(description="folder inside the workspace")] = ".",
        offset: Annotated[int, Field(ge=0, description="entry to start at: a page's next_offset")] = 0,
    ) -> files.ListFilesResult:
        return files.list_files(sandbox, workspace, path, offset)

    @server.tool(
        name="read_file",
        title="Read a workspace file",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only; confined to the workspace; text files only. Protected files "
            "(original/udf.py, aether.toml) can be read; of .aether/ only artifacts (runs/, bench/, profiles/, report/, validate/). "
            "Returns one page of the text (at most 40,000 characters, whole lines) from `offset` or `start_line`, "
            "its line numbers, and `next_offset` with a `more` line while more follows."
        ),
    )
    def read_file(
        workspace: WorkspaceArg,
        path: Annotated[str, Field(description="file path inside the workspace")],
        offset: Annotated[int, Field(ge=0, description="character offset to start at: a page's next_offset")] = 0,
        start_line: Annotated[int | None, Field(ge=1, description="start at this line (1-based) instead")] = None,
    ) -> files.ReadFileResult:
        return files.read_file(sandbox, workspace, path, offset, start_line)

    @server.tool(
        name="write_file",
        title="Write a workspace file",
        annotations=_annotations(read_only=False, destructive=True, idempotent=True),
        description=(
            "Constraints: confined to the workspace; at most 1 MiB of UTF-8 text; never writes through a "
            "symlink; refuses protected files (aether.toml, original/, .aether/) and harness plumbing "
            "(conftest.py, pytest.ini, pyproject.toml, setup.cfg, tox.ini). Creates or replaces the file "
            "(parent folders are created). Use it for tests/cases.py, tests/test_*.py and candidate/<name>.py."
        ),
    )
    def write_file(
        workspace: WorkspaceArg,
        path: Annotated[str, Field(description="file path inside the workspace, e.g. tests/cases.py")],
        content: Annotated[str, Field(description="the complete new text of the file")],
    ) -> files.WriteFileResult:
        return files.write_file(sandbox, workspace, path, content)

    @server.tool(
        name="record_cases",
        title="Record the original's real outputs as behaviour cases",
        annotations=_annotations(read_only=False),
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
        return await _in_thread(ctx, _scoped(case_recording.record_cases, sandbox, pool, workspace, inputs, why))

    @server.tool(
        name="run_tests",
        title="Run the workspace's tests against a target through Spark",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Constraints: `target` is 'original' or 'candidate:<name>'; needs tests/test_*.py; killed after `timeout_s` "
            "(default aether.toml's, 300 s). Runs pytest in a sandboxed process with the fixture `udf_under_test(rows)` bound to "
            "the target, evaluating rows through a real SparkSession. Returns counts, each test's outcome with a capped message, "
            "the log's path and the backend (`simulated` for a kernel on CPU). Reports progress; cancellable."
        ),
    )
    async def run_tests(
        workspace: WorkspaceArg,
        target: Annotated[str, Field(description="'original' or 'candidate:<name>'")],
        ctx: Context,
        timeout_s: Annotated[int | None, Field(ge=1, le=3600, description="hard limit for the whole run, in seconds")] = None,
        backend: BackendArg = None,
    ) -> suite_runs.RunTestsResult:
        return await _in_thread(ctx, partial(suite_runs.run_tests, sandbox, pool, workspace, target, timeout_s=timeout_s, backend=backend))

    @server.tool(
        name="coverage_report",
        title="Line and branch coverage of the original under the cases",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Constraints: needs cases in tests/cases.py and Java 17+. Measures line and branch coverage of "
            "original/udf.py (the UDF and its helpers) with coverage.py while the original runs on every case, its "
            "arguments exactly as Spark delivers them. Returns line_percent, branch_percent, up to 100 uncovered lines or "
            "branches (line, source, missed destination; unjustified first, the rest counted and in record_path) and the gate (default: every line and branch covered or "
            "justified). Next: suggest_inputs, record_cases, or justify."
        ),
    )
    async def coverage_report(workspace: WorkspaceArg, ctx: Context) -> spec_strength.CoverageReport:
        return await _in_thread(ctx, _scoped(spec_strength.coverage_report, sandbox, pool, workspace))

    @server.tool(
        name="mutation_score",
        title="How many plausible bugs the cases catch",
        annotations=_annotations(read_only=True, idempotent=True),
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
        return await _in_thread(ctx, _scoped(spec_strength.mutation_score, sandbox, pool, workspace))

    @server.tool(
        name="suggest_inputs",
        title="Input rows that close coverage and mutation gaps",
        annotations=_annotations(read_only=False, idempotent=False),
        description=(
            "Constraints: needs cases in tests/cases.py and Java 17+ (runs coverage_report and mutation_score when "
            "their results are stale). Returns argument rows in record_cases form, each with what it targets: an "
            "uncovered line or branch, a surviving mutant it kills, a mined boundary (65 gives 64, 65, 66), a string "
            "literal with perturbations, an argument set to null. Pass the ones you want to record_cases."
        ),
    )
    async def suggest_inputs(workspace: WorkspaceArg, ctx: Context) -> spec_strength.SuggestInputsResult:
        return await _in_thread(ctx, _scoped(spec_strength.suggest_inputs, sandbox, pool, workspace))

    @server.tool(
        name="audit_tests",
        title="Review the tests for patterns that pin nothing",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Static review of tests/test_*.py (never run in the server) and tests/cases.py: tests without "
            "assertions, only weak assertions (non-null, row counts, types), skip/xfail, try/except that swallows "
            "failures, float tolerances wider than the exact policy, tests that never call udf_under_test, "
            "duplicated cases. Dynamic: runs the suite against canaries (null and fixed values for every row) and "
            "flags tests that still pass. Returns up to 50 findings (the rest counted and in record_path) with file, line, test, why it matters and the fix."
        ),
    )
    async def audit_tests(workspace: WorkspaceArg, ctx: Context) -> suite_audit.AuditTestsResult:
        return await _in_thread(ctx, _scoped(suite_audit.audit_tests, sandbox, pool, workspace))

    @server.tool(
        name="justify",
        title="Record why an uncovered branch or surviving mutant is acceptable",
        annotations=_annotations(read_only=False, idempotent=True),
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
        annotations=_annotations(read_only=False),
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
        annotations=_annotations(read_only=False),
        description=(
            "Constraints: the tests must be frozen; `reason` at least 15 characters. Lifts the freeze and logs the "
            "reason with the files changed since the freeze; the log is shown by workspace_status and the report, so "
            "weakening tests to make a candidate pass is never silent."
        ),
    )
    def unfreeze_tests(workspace: WorkspaceArg, reason: Annotated[str, Field(description="why the frozen tests must change")]) -> freezing.UnfreezeResult:
        return freezing.unfreeze_tests(sandbox, workspace, reason)

    @server.tool(
        name="byte_compare",
        title="Prove a candidate equal to the original as Spark runs it",
        annotations=_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: `candidate` names candidate/<name>.py. Runs the original (reference worker) and the candidate (confined "
            "candidate worker, batch shape drawn per call) on every case, an edge corpus of the argument types, and hidden rows from a "
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
        return await _in_thread(ctx, partial(byte_compare.byte_compare, sandbox, pool, workspace, candidate, hidden_rows, backend=backend))

    @server.tool(
        name="audit_candidate",
        title="Audit a candidate for cheats, with a fresh comparison",
        annotations=_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: `candidate` names candidate/<name>.py; the workspace intact, its tests (if frozen) as recorded. "
            "A deterministic judge: static rules over the candidate and the modules it imports (reaching the original, row-at-a-time "
            "work, host round trips, hard-coded test data, forbidden reads, tampering, threads/processes/JVM calls, memoization, "
            "imports off the allow-list), watched runs in the confined candidate worker (tripwire original, audit-hook events, Python "
            "steps at 1,000 vs 20,000 rows, the sql plan, outputs compared, nothing left running) and a fresh byte_compare. "
            "Returns `verdict` PASS, PASS (unconfined) or FAIL with `reasons`, up to 50 `findings` (blocking first; all in result_path), "
            "the comparison summary, the backend and `confinement`. On the GPU backend, device counters showing no kernel or "
            "mid-run host copies are blocking. Reports progress; cancelling stops it."
        ),
    )
    async def audit_candidate(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        ctx: Context,
        hidden_rows: Annotated[int, Field(ge=1000, le=200_000, description="hidden rows for the fresh comparison")] = 20_000,
        backend: BackendArg = None,
    ) -> cheat_audit.AuditCandidateResult:
        return await _in_thread(ctx, partial(cheat_audit.audit_candidate, sandbox, pool, workspace, candidate, hidden_rows, backend=backend))

    @server.tool(
        name="record_deviation",
        title="Declare a behaviour difference of a candidate",
        annotations=_annotations(read_only=False),
        description=(
            "Constraints: `summary` and `reason` at least 10 characters; give `ulp_tolerance` (floats this many ULPs apart are "
            "equal), `applies_to` (a predicate over the argument names, e.g. \"amount is not None and amount < 0\": comparisons, "
            "and/or/not, arithmetic, abs/len/min/max/round/isnan/isinf and string methods such as strip/lower), or both (the "
            "tolerance on those rows only); `applies_to` alone puts those rows out of scope. `returns_where_original_raises`: "
            "where the original raises, the candidate may return a value. Relaxes comparisons exactly as declared; every later "
            "result lists it. Returns the candidate's deviations."
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
        annotations=_annotations(read_only=False, destructive=True),
        description="Removes one deviation (by the deviation_id record_deviation returned); later comparisons are exact again there. Returns the deviations left.",
    )
    def remove_deviation(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        deviation_id: Annotated[str, Field(description="e.g. dev-1")],
    ) -> deviation_records.DeviationsResult:
        return deviation_records.remove_deviation(sandbox, workspace, candidate, deviation_id)

    @server.tool(
        name="generate_data",
        title="Generate benchmark data for the UDF's arguments",
        annotations=_annotations(read_only=False, idempotent=True),
        description=(
            "Constraints: `spec` maps argument names to {null_rate, min, max, "
            "values}. Writes Parquet under .aether/data/, deterministic for (spec, seed, rows) and reused when they "
            "match: numbers around the constants the original compares against (30% exactly those), strings from a "
            "Zipf-skewed vocabulary of its literals with case and padding variants, 5% nulls per column by default. "
            "Returns the path, the column recipes and whether the file was reused. Reports progress."
        ),
    )
    async def generate_data(
        workspace: WorkspaceArg,
        ctx: Context,
        rows: Annotated[int, Field(ge=1, le=50_000_000, description="how many rows")] = 1_000_000,
        seed: Annotated[int | None, Field(ge=0, le=2**63 - 1, description="generator seed (default 0)")] = None,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="per argument: null_rate, min, max, values")] = None,
    ) -> GenerateDataResult:
        return await _in_thread(ctx, lambda cancel, progress: benchmarking.generate_data(sandbox, workspace, rows, seed, spec, progress))

    @server.tool(
        name="run_benchmark",
        title="Benchmark original vs candidate vs the no-UDF floor in Spark",
        annotations=_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: the candidate must pass byte_compare on 2000 hidden rows first; kernel candidates need the GPU backend. "
            "Generates (or reuses) data as generate_data does (`spec`), then a separate Spark application (`master`, else "
            "aether.toml's [benchmark] master, else local[*]) reads the Parquet, applies each mode and writes every column to the "
            "noop sink, modes interleaved in a fresh order each round. Returns per-mode median/min/max/cv/rows_per_s, failed modes, "
            "speedup (median of per-round ratios) with a 95% bootstrap speedup_ci (rounds added until within +/- precision or "
            "time_budget_s; rounds_ended_by), overhead_eliminated, backend, gpu_verified, environment and artifacts {json, chart}. "
            "Reports progress; cancelling stops it."
        ),
    )
    async def run_benchmark(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        ctx: Context,
        rows: Annotated[int, Field(ge=1, le=50_000_000, description="rows of generated data")] = benchmarking.DEFAULT_ROWS,
        repeats: Annotated[int, Field(ge=1, le=50, description="recorded runs per mode")] = 5,
        warmup: Annotated[int, Field(ge=0, le=10, description="unrecorded rounds first")] = 1,
        modes: Annotated[list[Literal["floor", "original", "original_arrow", "candidate"]] | None, Field(description="default all")] = None,
        master: Annotated[str | None, Field(description="Spark master URL, e.g. spark://host:7077 (remote: audit_candidate must have passed the current bytes here); default aether.toml's [benchmark] master, else local[*]")] = None,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
        backend: BackendArg = None,
        precision: Annotated[float, Field(gt=0, le=1, description="target half-width of the speedup's 95% interval, as a share of the speedup")] = benchmarking.DEFAULT_PRECISION,
        time_budget_s: Annotated[float | None, Field(ge=0, le=3600, description="most seconds of extra rounds; default as long again as the first rounds took, at most 60")] = None,
    ) -> benchmarking.RunBenchmarkResult:
        return await _in_thread(
            ctx, partial(benchmarking.run_benchmark, sandbox, pool, workspace, candidate, rows, repeats, warmup, modes, master, spec, backend=backend, precision=precision, time_budget_s=time_budget_s)
        )

    @server.tool(
        name="validate_on_data",
        title="Compare original and candidate over the user's own data, inside Spark",
        annotations=_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: not for aggregations; data: Parquet, CSV, JSON or ORC inside the root, or a URI the master reads. "
            "Three Spark applications on `master`: the original over the data's argument columns (`columns`, in argument order, "
            "cast to the declared types), the candidate confined over the same numbered rows, then a comparison in Spark "
            "(null-safe, NaN only NaN, -0.0 apart, floats exact or within recorded ULPs, nested values, raises matched). Returns "
            "verdict, rows_compared, counts by mismatch kind, rows the original raised on, 20 mismatching rows, each side's seconds."
        ),
    )
    async def validate_on_data(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        data: Annotated[str, Field(min_length=1, max_length=2000, description="path inside the root, or a URI (s3a://, hdfs://, ...)")],
        ctx: Context,
        columns: Annotated[list[str] | None, Field(description="the data's column for each argument, in order")] = None,
        format: Annotated[Literal["parquet", "csv", "json", "orc"] | None, Field(description="default from the file names")] = None,
        master: Annotated[str | None, Field(description="Spark master URL, e.g. spark://host:7077 (remote: audit_candidate must have passed the current bytes here); default aether.toml's [benchmark] master, else local[*]")] = None,
        limit: Annotated[int | None, Field(ge=1, le=10_000_000_000, description="compare at most this many rows")] = None,
    ) -> data_validation.ValidateOnDataResult:
        return await _in_thread(ctx, lambda cancel, progress: data_validation.validate_on_data(sandbox, workspace, candidate, data, columns, format, master, limit, progress=progress, cancel=cancel))

    @server.tool(
        name="tune_arrow_batch",
        title="Sweep the Arrow batch size for a vectorized candidate",
        annotations=_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: a vectorized (on a GPU, kernel) candidate that passes byte_compare on 2000 hidden rows; 1 to 12 values "
            "of spark.sql.execution.arrow.maxRecordsPerBatch (default 1000 to 500000). Times the candidate (and a pandas UDF "
            "original) at each size in the benchmark's application, interleaved, with the Python workers' peak memory. Returns "
            "the points, the fastest size, the setting to use, and artifacts {json, chart}. Reports progress; cancellable."
        ),
    )
    async def tune_arrow_batch(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        ctx: Context,
        sizes: Annotated[list[Annotated[int, Field(ge=1, le=10_000_000)]] | None, Field(min_length=1, max_length=12, description="batch sizes to try")] = None,
        rows: Annotated[int, Field(ge=1, le=50_000_000, description="rows of generated data")] = benchmarking.DEFAULT_ROWS,
        repeats: Annotated[int, Field(ge=1, le=50, description="recorded runs per size")] = 3,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
    ) -> benchmarking.TuneArrowBatchResult:
        return await _in_thread(ctx, partial(benchmarking.tune_arrow_batch, sandbox, pool, workspace, candidate, sizes, rows, repeats, None, spec))

    @server.tool(
        name="micro_benchmark",
        title="Time the candidate alone against the original, in seconds",
        annotations=_annotations(read_only=True, idempotent=False),
        description=(
            "Vectorized or kernel: in a child without Spark, on generated data shaped as Spark hands it over, evaluate(*series) "
            "vs the original mapped over the rows, one warm-up each, then alternating (GPU work synchronized). Sql: the "
            "expression and the original UDF each as a small Spark job over the same cached rows, written to the noop sink. "
            "For fast iteration; run_benchmark measures the job. Returns medians, every run, the speedup and the backend."
        ),
    )
    async def micro_benchmark(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        ctx: Context,
        rows: Annotated[int | None, Field(ge=1, le=50_000_000, description="rows of generated data; default 100000, or 200000 for a sql candidate (so its own cost shows above a Spark job's fixed cost)")] = None,
        repeats: Annotated[int, Field(ge=1, le=50, description="timed calls of each")] = 5,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
        backend: BackendArg = None,
    ) -> benchmarking.MicroBenchmarkResult:
        return await _in_thread(ctx, partial(benchmarking.micro_benchmark, sandbox, workspace, candidate, rows, repeats, spec, backend=backend, workers=pool))

    @server.tool(
        name="nsys_profile",
        title="Profile a candidate: nsys on a GPU, Python's profiler on CPU, the Spark plan for sql",
        annotations=_annotations(read_only=True, idempotent=False),
        description=(
            "Constraints: kernel candidates need a GPU. vectorized/kernel: with a GPU and nsys on the PATH, evaluate(*series) "
            "under `nsys profile`: backend 'nsys' with the top kernels, host/device copies, NVTX ranges, kernel/wall ratio and "
            "hints; otherwise backend 'cpu': Python's profiler, `hotspots` (function, file:line, seconds, calls per row). sql: "
            "backend 'spark-plan': the plans, codegen coverage, repeated subexpressions, and which (name, Column) steps Spark "
            "kept or inlined. Raw reports stay on disk (artifacts)."
        ),
    )
    async def nsys_profile(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        ctx: Context,
        rows: Annotated[int, Field(ge=1, le=10_000_000, description="rows of generated data for vectorized/kernel candidates")] = 1_000_000,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
    ) -> profiling.ProfileResult:
        return await _in_thread(ctx, partial(profiling.nsys_profile, sandbox, pool, workspace, candidate, rows, spec))

    @server.tool(
        name="try_optimization",
        title="One verified optimize step: keep the change only if clean, equal and faster",
        annotations=_annotations(read_only=False, destructive=True, idempotent=False),
        description=(
            "Constraints: the tests must be frozen; `label` says what changed. The first call records the candidate as the "
            "best (after an audit_candidate PASS). Each later call snapshots the files, runs audit_candidate, then times the "
            "candidate against the best in one interleaved Spark run; accepted only if clean, equal and faster with the whole "
            "95% interval above 1 + min_gain. Otherwise candidate/ files are restored byte for byte to the best (the attempt "
            "stays in its snapshot). Returns accepted, reverted, reason, speedup and interval vs the best, advice (stop after "
            "10 steps or 3 rejections in a row); appends to .aether/journal.jsonl. Reports progress."
        ),
    )
    async def try_optimization(
        workspace: WorkspaceArg,
        candidate: CandidateArg,
        label: Annotated[str, Field(description="what this attempt changes, e.g. 'tier lookup as one map'")],
        ctx: Context,
        min_gain: Annotated[float, Field(ge=0, le=1, description="required gain over the best at the low end of the 95% interval")] = 0.03,
        rows: Annotated[int, Field(ge=1, le=50_000_000, description="rows of generated data for the timed run")] = benchmarking.DEFAULT_ROWS,
        repeats: Annotated[int, Field(ge=1, le=50, description="recorded rounds of best vs candidate")] = 7,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
        hidden_rows: Annotated[int, Field(ge=1000, le=200_000, description="hidden rows for the audit's fresh comparison")] = 20_000,
    ) -> optimization.TryOptimizationResult:
        return await _in_thread(ctx, partial(optimization.try_optimization, sandbox, pool, workspace, candidate, label, min_gain, rows, repeats, spec, hidden_rows))

    @server.tool(
        name="report",
        title="Write the conversion report",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Runs nothing: builds the report from what the tools recorded, marking results of files changed since as stale. "
            "Writes .aether/report/report.md and report.json (artifacts) with sections: the UDF and its source, tests "
            "(cases, coverage, mutation score, justifications, unfreezes), every candidate with its comparison and audit, "
            "recorded deviations, benchmarks with charts, profiles, the optimization journal, and the recommendation: "
            "which candidate to ship and the exact code that replaces the UDF call in the job. The Markdown is embedded "
            "when under 48 KiB; also readable as the resource aether://workspaces/{name}/report."
        ),
    )
    def report(workspace: WorkspaceArg) -> conversion_report.ReportResult:
        return conversion_report.report(sandbox, workspace)

    @server.tool(
        name="apply_conversion",
        title="Write the job with its UDF replaced by a verified candidate, next to the original",
        annotations=_annotations(read_only=False, idempotent=True),
        description=(
            "Constraints: the candidate has byte_compare equal and audit_candidate PASS on its current file; sql or vectorized. "
            "Never edits your files: writes <job>.converted.py and <udf>_<candidate>.py beside the job (replacing only its own "
            "earlier output) and a diff under .aether/report/. The UDF's definition becomes the candidate's wiring: sql, a function "
            "returning its Column (withColumn sites use with_<udf>); vectorized, a scalar Arrow UDF (a registered name stays "
            "registered). Checked first: it parses, no Python UDF is left for the function, it imports (confined) without "
            "starting Spark. Returns the paths, the checks and how to adopt it."
        ),
    )
    async def apply_conversion(workspace: WorkspaceArg, candidate: CandidateArg, ctx: Context) -> job_conversion.ApplyConversionResult:
        return await _in_thread(ctx, lambda cancel, progress: job_conversion.apply_conversion(sandbox, workspace, candidate))

    @server.tool(
        name="snapshot",
        title="Snapshot the agent's files",
        annotations=_annotations(read_only=False),
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
        annotations=_annotations(read_only=True, idempotent=True),
        description="Read-only. Lists the workspace's snapshots (id, label, time, file count), oldest first; snapshot 0 is the workspace as created.",
    )
    def list_snapshots(workspace: WorkspaceArg) -> snapshots.ListSnapshotsResult:
        return snapshots.list_snapshots(sandbox, workspace)

    @server.tool(
        name="diff",
        title="Diff two snapshots",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only. Unified diff of the editable files between snapshot `from_id` and snapshot `to_id` "
            "(omit to_id to compare with the current files), with added/removed/modified lists and changed lines per file; "
            "one page (at most 40,000 characters) from `offset`, of one file's diff with `path`; `next_offset` and `more` while more follows."
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
        annotations=_annotations(read_only=False, destructive=True, idempotent=True),
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
        annotations=_annotations(read_only=False),
        description=(
            f"For work longer than a host waits for (benchmarks at 1M rows, optimization steps, audits): starts `tool` "
            f"({', '.join(BACKGROUND_TOOLS)}) with `arguments` exactly as a direct call takes them (checked now) and returns "
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
        annotations=_annotations(read_only=True, idempotent=True),
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
        annotations=_annotations(read_only=False, idempotent=True),
        description="Stops a background run and every process it started (waits up to 30 s for them to end); returns its status.",
    )
    async def cancel_run(run_id: Annotated[str, Field(description="the run_id from start_run")]) -> background_runs.RunStatus:
        return await anyio.to_thread.run_sync(runs.cancel, run_id, abandon_on_cancel=True)

    _register_prompts(server)
    _register_resources(server, sandbox)
    strict_wire.tighten(server, links=partial(artifact_links.links, sandbox))
    return server


def _register_prompts(server: MCPServer) -> None:
    @server.prompt(name="convert_udf", title="Convert a PySpark UDF, all four phases", description="The whole loop for one UDF: specify, convert, benchmark, optimize, with the gates, the rules and when to stop.")
    def convert_udf(
        source: Annotated[str, Field(description="the job's .py file, relative to the server root")],
        udf: Annotated[str, Field(description="the UDF's name in it")],
    ) -> str:
        return prompts.convert_udf(source, udf)

    @server.prompt(name="specify", title="Phase 1: pin the original's behaviour in tests", description="Record cases, close coverage and mutation gaps, freeze the tests.")
    def specify(workspace: Annotated[str, Field(description="the workspace path")]) -> str:
        return prompts.phase(prompts.SPECIFY, workspace)

    @server.prompt(name="convert", title="Phase 2: write a candidate and prove it equal", description="Choose a target, write the candidate, run_tests, byte_compare, audit_candidate.")
    def convert(workspace: Annotated[str, Field(description="the workspace path")]) -> str:
        return prompts.phase(prompts.CONVERT, workspace)

    @server.prompt(name="benchmark", title="Phase 3: benchmark the candidate in Spark", description="run_benchmark against the original and the no-UDF floor; tune the Arrow batch size.")
    def benchmark(
        workspace: Annotated[str, Field(description="the workspace path")],
        candidate: Annotated[str, Field(description="the candidate's name")],
    ) -> str:
        return prompts.phase(prompts.BENCHMARK, workspace, candidate)

    @server.prompt(name="optimize", title="Phase 4: profile and keep only verified wins", description="nsys_profile, then try_optimization step by step, then report.")
    def optimize(
        workspace: Annotated[str, Field(description="the workspace path")],
        candidate: Annotated[str, Field(description="the candidate's name")],
    ) -> str:
        return prompts.phase(prompts.OPTIMIZE, workspace, candidate)


NOTES = {
    "semantic-traps": ("semantic_traps.md", "Python vs Spark semantic traps", "round, %, strip/trim, split, lower on Unicode, str(None), overflow under ANSI mode, NaN ordering: what differs and the exact equivalent."),
    "spark-functions": ("spark_functions.md", "Spark functions for Python idioms", "Which pyspark.sql.functions replace common Python idioms in UDFs, with the caveats that keep a rewrite exact."),
    "gpu-idioms": ("gpu_idioms.md", "pandas/NumPy idioms that cuDF/CuPy run on a GPU", "Whole-batch idioms for vectorized candidates that run on cuDF/CuPy, and what falls back to the host."),
}


def _register_resources(server: MCPServer, sandbox: SandboxRoot) -> None:
    from importlib import resources

    def note_reader(filename: str) -> Callable[[], str]:
        def read() -> str:
            return resources.files("aether_mcp").joinpath("notes", filename).read_text(encoding="utf-8")

        return read

    for key, (filename, title, description) in NOTES.items():
        server.resource(f"aether://notes/{key}", name=key, title=title, description=description, mime_type="text/markdown")(note_reader(filename))

    @server.resource(
        "aether://schemas/{tool}",
        name="result-schema",
        title="A tool's result schema",
        description="The JSON schema of a tool's structured result, every field described (tools/list leaves result schemas out to stay small).",
        mime_type="application/schema+json",
    )
    def result_schema(tool: str) -> str:
        schema = strict_wire.result_schema(server, tool)
        if schema is None:
            raise ResourceNotFoundError(f"no tool named {tool!r}; the tools are those tools/list returns")
        return json.dumps(schema, indent=1)

    @server.resource(
        artifact_links.FILE_TEMPLATE,
        name="workspace-artifact",
        title="A text artifact of a workspace (log, record, profile, report)",
        description=(
            "A file under the workspace's .aether/runs, bench, profiles or report folder, one page of at most 40,000 characters "
            "from `offset`; a page with more after it ends with the line '[N more characters: read <uri>?offset=K]'. Tool results link here."
        ),
        mime_type="text/plain",
    )
    def workspace_artifact(name: str, path: str, offset: int = 0) -> str:
        return _as_resource_error(artifact_links.read_text, sandbox, name, path, offset)

    @server.resource(
        artifact_links.CHART_TEMPLATE,
        name="workspace-chart",
        title="A chart of a workspace (benchmark or Arrow batch sweep)",
        description="A PNG chart under the workspace's .aether/bench folder; benchmark results link here.",
        mime_type="image/png",
    )
    def workspace_chart(name: str, path: str) -> bytes:
        return _as_resource_error(artifact_links.read_chart, sandbox, name, path)

    @server.resource(
        "aether://workspaces/{name}/report",
        name="workspace-report",
        title="A workspace's conversion report",
        description="The conversion report (Markdown) of the workspace aether_workspaces/<name> (or <name> under the server root), built from its recorded results.",
        mime_type="text/markdown",
    )
    def workspace_report(name: str) -> str:
        return _as_resource_error(conversion_report.report_markdown, sandbox, name)


def _as_resource_error(read: Callable[..., T], *args: Any) -> T:
    """`read(*args)`, its ToolError said in the same words as a resource error (not found when nothing is there)."""
    try:
        return read(*args)
    except ToolError as exc:
        missing = "no workspace named" in str(exc) or "does not exist" in str(exc)
        raise ResourceNotFoundError(str(exc)) if missing else ResourceError(str(exc)) from None
