"""The MCP layer, and only that: tool registration, titles, annotations, descriptions, errors.

Every tool is a plain function in `aether_mcp.tools`; this module binds them to one server root
and one worker pool. Tools are registered in a fixed order, which is the order of `tools/list`.
"""

from __future__ import annotations

import contextlib
import threading
from functools import partial
from typing import Annotated, Any, AsyncIterator, Callable, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from aether_mcp import __version__
from aether_mcp.bench_data import GenerateDataResult
from aether_mcp.harness.worker_pool import WorkerPool
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import benchmarking, byte_compare, case_recording, cheat_audit, deviation_records, files, freezing, snapshots, spec_strength, test_audit, test_runs, workspaces

INSTRUCTIONS = """\
aether-mcp converts one PySpark Python UDF at a time into a faster equivalent and proves the two
equal as Spark runs them. Loop: init_workspace(source, udf) -> write tests/cases.py ->
run_tests(workspace, "original") until the tests pin the original -> write candidate/<name>.py ->
run_tests(workspace, "candidate:<name>") -> byte_compare -> audit_candidate (PASS needs no cheat
finding and a fresh equal comparison). A difference you cannot remove is declared with
record_deviation, never hidden. snapshot/revert/diff keep work safe; workspace_status
says where a workspace stands. Only files inside the server root can be used."""

T = TypeVar("T")
WorkspaceArg = Annotated[str, Field(description="the workspace path returned by init_workspace (absolute, or relative to the server root)")]
SnapshotIdArg = Annotated[int, Field(description="a snapshot id from snapshot or list_snapshots")]


def _annotations(*, read_only: bool, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        readOnlyHint=read_only,
        destructiveHint=None if read_only else destructive,
        idempotentHint=idempotent,
        openWorldHint=False,
    )


async def _in_thread(ctx: Context, call: Callable[..., T]) -> T:
    """Run a long tool in a worker thread with progress reporting; cancelling the call stops its work."""
    cancel = threading.Event()

    def progress(done: int, total: int | None, message: str) -> None:
        with contextlib.suppress(Exception):  # a client that went away must not fail the run
            anyio.from_thread.run(partial(ctx.report_progress, done, total, message))

    try:
        return await anyio.to_thread.run_sync(partial(call, cancel=cancel, progress=progress), abandon_on_cancel=True)
    finally:
        cancel.set()


def build_server(root: str, *, workers: WorkerPool | None = None) -> MCPServer:
    """An MCP server whose tools can reach only files inside `root`."""
    sandbox = SandboxRoot(root)
    pool = workers or WorkerPool()

    @contextlib.asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if workers is None:  # a pool passed in belongs to the caller
                pool.close()

    server = MCPServer(name="aether-mcp", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool(
        name="init_workspace",
        title="Create a conversion workspace for one UDF",
        annotations=_annotations(read_only=False),
        description=(
            "Constraints: `source` must be a Python file inside the server root; it is parsed, never run. "
            "`udf` names one UDF in it (@udf/@pandas_udf function, `name = udf(fn, type)`, or a "
            "spark.udf.register name; `name:LINE` picks one of several). Argument Spark types come from type "
            "hints or `arg_types` ({\"amount\": \"double\"}); without either the call is refused. `workspace` "
            "(default aether_workspaces/<udf>) must be new or empty.\n"
            "Extracts the UDF with exactly the imports, constants and helpers it uses into original/udf.py "
            "(protected), freezes aether.toml (UDF contract, Spark confs from the job), adds tests/ and "
            "candidate/ templates, and takes snapshot 0. Returns the workspace path and the UDF's signature."
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
    ) -> workspaces.InitWorkspaceResult:
        return workspaces.init_workspace(sandbox, source, udf, arg_types=arg_types, workspace=workspace, return_type=return_type, benchmark_master=benchmark_master)

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
            "state (only .aether/runs/ can be listed). Lists files and folders under `path` (default: the whole "
            "workspace), each marked protected or not."
        ),
    )
    def list_files(workspace: WorkspaceArg, path: Annotated[str, Field(description="folder inside the workspace")] = ".") -> files.ListFilesResult:
        return files.list_files(sandbox, workspace, path)

    @server.tool(
        name="read_file",
        title="Read a workspace file",
        annotations=_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only; confined to the workspace; text files only, first 256 KiB. Protected files "
            "(original/udf.py, aether.toml) can be read; of .aether/ only test-run logs (.aether/runs/). "
            "Returns the file's text."
        ),
    )
    def read_file(workspace: WorkspaceArg, path: Annotated[str, Field(description="file path inside the workspace")]) -> files.ReadFileResult:
        return files.read_file(sandbox, workspace, path)

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
            "Constraints: `inputs` is a list of 1..1000 argument rows in UDF order, JSON values converted by the "
            "declared argument types (floats may be \"NaN\", \"Infinity\", \"-Infinity\", \"-0.0\"; decimals numbers "
            "or strings; dates \"YYYY-MM-DD\"; timestamps ISO 8601; binary {\"hex\": \"..\"}); refused while the tests "
            "are frozen. Runs the original on the rows through Spark (reference worker) and appends them to "
            "tests/cases.py with the original's output as `expected`, or the exception it raised as `raises`; rows "
            "already there are skipped. `why` (optional) is stored with each case."
        ),
    )
    def record_cases(
        workspace: WorkspaceArg,
        inputs: Annotated[list[Any], Field(description="argument rows, e.g. [[65, 100.0, \"gold\"], [null, \"NaN\", \" gold\"]]")],
        why: Annotated[str | None, Field(description="what these rows pin, one line")] = None,
    ) -> case_recording.RecordCasesResult:
        return case_recording.record_cases(sandbox, pool, workspace, inputs, why)

    @server.tool(
        name="run_tests",
        title="Run the workspace's tests against a target through Spark",
        annotations=_annotations(read_only=False, idempotent=True),
        description=(
            "Constraints: `target` is 'original' or 'candidate:<name>' (file candidate/<name>.py); the workspace "
            "needs tests/test_*.py; the run is killed after `timeout_s` (default from aether.toml, 300 s). "
            "Needs Java 17+. Runs pytest in a separate sandboxed process with the harness fixture "
            "`udf_under_test(rows)` bound to the target: it evaluates argument rows through a real SparkSession "
            "and returns the outputs. Returns counts, each test's outcome with a capped message, and the path "
            "of the full log. Reports progress; cancelling stops the run."
        ),
    )
    async def run_tests(
        workspace: WorkspaceArg,
        target: Annotated[str, Field(description="'original' or 'candidate:<name>'")],
        ctx: Context,
        timeout_s: Annotated[int | None, Field(description="hard limit for the whole run, 1..3600 s")] = None,
    ) -> test_runs.RunTestsResult:
        return await _in_thread(ctx, partial(test_runs.run_tests, sandbox, pool, workspace, target, timeout_s=timeout_s))

    @server.tool(
        name="coverage_report",
        title="Line and branch coverage of the original under the cases",
        annotations=_annotations(read_only=False, idempotent=True),
        description=(
            "Constraints: needs cases in tests/cases.py and Java 17+. Measures line and branch coverage of "
            "original/udf.py (the UDF and its helpers) with coverage.py while the original runs on every case, its "
            "arguments exactly as Spark delivers them. Returns line_percent, branch_percent, each uncovered line or "
            "branch (line, source, missed destination) and the gate (default: every line and branch covered or "
            "justified). Next: suggest_inputs, record_cases, or justify."
        ),
    )
    def coverage_report(workspace: WorkspaceArg) -> spec_strength.CoverageReport:
        return spec_strength.coverage_report(sandbox, pool, workspace)

    @server.tool(
        name="mutation_score",
        title="How many plausible bugs the cases catch",
        annotations=_annotations(read_only=False, idempotent=True),
        description=(
            "Constraints: needs cases in tests/cases.py and Java 17+. Generates mutants of original/udf.py "
            "(comparison operators and boundaries, arithmetic, constants +/-1 and 0, negated conditions, and/or, "
            "return None, removed if bodies, changed string literals) and runs every case against each as plain "
            "Python on the arguments as Spark delivers them: a mutant is killed when an output differs from the "
            "original's. Returns total, killed, score and the survivors, each with a unified diff, its line and "
            "whether generated inputs could tell it apart at all (likely_equivalent). Gate: score >= 0.8 or every "
            "survivor justified."
        ),
    )
    def mutation_score(workspace: WorkspaceArg) -> spec_strength.MutationScore:
        return spec_strength.mutation_score(sandbox, pool, workspace)

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
    def suggest_inputs(workspace: WorkspaceArg) -> spec_strength.SuggestInputsResult:
        return spec_strength.suggest_inputs(sandbox, pool, workspace)

    @server.tool(
        name="audit_tests",
        title="Review the tests for patterns that pin nothing",
        annotations=_annotations(read_only=False, idempotent=True),
        description=(
            "Static review of tests/test_*.py (never run in the server) and tests/cases.py: tests without "
            "assertions, only weak assertions (non-null, row counts, types), skip/xfail, try/except that swallows "
            "failures, float tolerances wider than the exact policy, tests that never call udf_under_test, "
            "duplicated cases. Dynamic: runs the suite against canaries (null and fixed values for every row) and "
            "flags tests that still pass. Returns findings with file, line, test, why it matters and the fix."
        ),
    )
    def audit_tests(workspace: WorkspaceArg) -> test_audit.AuditTestsResult:
        return test_audit.audit_tests(sandbox, pool, workspace)

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
        annotations=_annotations(read_only=False, idempotent=False),
        description=(
            "Constraints: `candidate` names candidate/<name>.py; hidden_rows 0..200000 (default 20000); argument "
            "and return types must be boolean, integers, float, double, decimal, string, binary, date, timestamp "
            "or arrays of these; needs Java 17+. Runs the original (reference worker) and the candidate "
            "(candidate worker, with a batch shape drawn per call) on every row of tests/cases.py, an edge corpus "
            "of the argument types, and hidden rows generated from a fresh secret seed around the constants and "
            "literals of the original; compares every output in the server, exactly (null only null, NaN only "
            "NaN, -0.0 is not 0.0, floats bit for bit, types must match). Returns `equal`, per-source counts, the "
            "first mismatches (hidden ones shrunk to small counterexamples), what the original raised on, the "
            "policy and the backend. Reports progress; cancelling stops it."
        ),
    )
    async def byte_compare_tool(
        workspace: WorkspaceArg,
        candidate: Annotated[str, Field(description="the candidate's name (file candidate/<name>.py)")],
        ctx: Context,
        hidden_rows: Annotated[int, Field(description="how many hidden rows to generate, 0..200000")] = 20_000,
    ) -> byte_compare.ByteCompareResult:
        return await _in_thread(ctx, partial(byte_compare.byte_compare, sandbox, pool, workspace, candidate, hidden_rows))

    @server.tool(
        name="audit_candidate",
        title="Audit a candidate for cheats, with a fresh comparison",
        annotations=_annotations(read_only=False, idempotent=False),
        description=(
            "Constraints: `candidate` names candidate/<name>.py; hidden_rows 1000..200000; the workspace must be intact "
            "and its tests, if frozen, as recorded. A deterministic judge, all code: static rules over the candidate and the workspace "
            "modules it imports (reaching the original, row-at-a-time work, host round trips, fallbacks, hard-coded "
            "test data, forbidden reads, tampering, threads/processes/JVM calls, memoization), watched runs in the "
            "candidate worker (a tripwire original, Python steps in the candidate's code on 1,000 vs 20,000 rows, the executed plan of sql "
            "targets, inputs unchanged, one batch vs one-row batches, nothing left running) and a fresh byte_compare "
            "on new hidden rows. Returns `verdict` PASS or FAIL with `reasons`, `findings` (rule, severity, file, "
            "line, evidence, why, fix) and the comparison summary. Reports progress; cancelling stops it."
        ),
    )
    async def audit_candidate(
        workspace: WorkspaceArg,
        candidate: Annotated[str, Field(description="the candidate's name (file candidate/<name>.py)")],
        ctx: Context,
        hidden_rows: Annotated[int, Field(description="hidden rows for the fresh comparison, 1000..200000")] = 20_000,
    ) -> cheat_audit.AuditCandidateResult:
        return await _in_thread(ctx, partial(cheat_audit.audit_candidate, sandbox, pool, workspace, candidate, hidden_rows))

    @server.tool(
        name="record_deviation",
        title="Declare a behaviour difference of a candidate",
        annotations=_annotations(read_only=False),
        description=(
            "Constraints: `summary` and `reason` at least 10 characters each; give `ulp_tolerance` (1..1000000: "
            "floats this many ULPs apart count as equal), `applies_to` (a Python-style predicate over the argument "
            "names, e.g. \"amount is not None and amount < 0\": argument names, constants, comparisons, and/or/not, "
            "arithmetic, abs/len/min/max/round/isnan/isinf/isfinite and a few string methods such as strip/lower), or both (the tolerance only on those rows). `applies_to` alone puts "
            "those rows out of scope. Relaxes byte_compare and audit_candidate exactly as declared; every later "
            "result lists the deviation. Returns the candidate's deviations; remove_deviation takes one back."
        ),
    )
    def record_deviation(
        workspace: WorkspaceArg,
        candidate: Annotated[str, Field(description="the candidate's name (file candidate/<name>.py)")],
        summary: Annotated[str, Field(description="what differs, e.g. 'sin() results within 2 ULP'")],
        reason: Annotated[str, Field(description="why the difference is acceptable for the pipeline")],
        applies_to: Annotated[str | None, Field(description="predicate over the arguments selecting the rows it covers; omit for every row")] = None,
        ulp_tolerance: Annotated[int | None, Field(description="floats this many ULPs apart count as equal")] = None,
    ) -> deviation_records.DeviationsResult:
        return deviation_records.record_deviation(sandbox, workspace, candidate, summary, reason, applies_to, ulp_tolerance)

    @server.tool(
        name="remove_deviation",
        title="Remove a recorded deviation",
        annotations=_annotations(read_only=False, destructive=True),
        description="Removes one deviation (by the deviation_id record_deviation returned); later comparisons are exact again there. Returns the deviations left.",
    )
    def remove_deviation(
        workspace: WorkspaceArg,
        candidate: Annotated[str, Field(description="the candidate's name (file candidate/<name>.py)")],
        deviation_id: Annotated[str, Field(description="e.g. dev-1")],
    ) -> deviation_records.DeviationsResult:
        return deviation_records.remove_deviation(sandbox, workspace, candidate, deviation_id)

    @server.tool(
        name="generate_data",
        title="Generate benchmark data for the UDF's arguments",
        annotations=_annotations(read_only=False, idempotent=True),
        description=(
            "Constraints: rows 1..50000000; seed >= 0 (default 0); `spec` maps argument names to {null_rate, min, max, "
            "values}. Writes Parquet under .aether/data/, deterministic for (spec, seed, rows) and reused when they "
            "match: numbers around the constants the original compares against (30% exactly those), strings from a "
            "Zipf-skewed vocabulary of its literals with case and padding variants, 5% nulls per column by default. "
            "Returns the path, the column recipes and whether the file was reused. Reports progress."
        ),
    )
    async def generate_data(
        workspace: WorkspaceArg,
        ctx: Context,
        rows: Annotated[int, Field(description="how many rows, 1..50000000")] = 1_000_000,
        seed: Annotated[int | None, Field(description="generator seed (default 0)")] = None,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="per argument: null_rate, min, max, values")] = None,
    ) -> GenerateDataResult:
        return await _in_thread(ctx, lambda cancel, progress: benchmarking.generate_data(sandbox, workspace, rows, seed, spec, progress))

    @server.tool(
        name="run_benchmark",
        title="Benchmark original vs candidate vs the no-UDF floor in Spark",
        annotations=_annotations(read_only=False, idempotent=False),
        description=(
            "Constraints: the candidate must pass byte_compare on 2000 hidden rows first (else refused with the reason); "
            "rows 1..50000000; repeats 1..50; warmup 0..10; modes from floor, original, original_arrow, candidate "
            "(default all); kernel candidates need a GPU. Generates (or reuses) data with generate_data's recipe "
            "(`spec` as there), then runs a separate Spark application (`master`, else aether.toml's [benchmark] master, else local[*]): each run "
            "reads the Parquet, applies the mode and writes every column to the noop sink; modes interleave in a fresh "
            "order each round after warm-up. Returns per-mode median/min/max/cv/rows_per_s, failed modes with their "
            "errors, speedup (median of per-round original/candidate ratios) with a 95% bootstrap speedup_ci, overhead_eliminated "
            "((original-candidate)/(original-floor)), the environment and confs, and artifacts {json, chart}. Reports "
            "progress; cancelling stops the Spark application."
        ),
    )
    async def run_benchmark(
        workspace: WorkspaceArg,
        candidate: Annotated[str, Field(description="the candidate's name (file candidate/<name>.py)")],
        ctx: Context,
        rows: Annotated[int, Field(description="rows of generated data")] = 1_000_000,
        repeats: Annotated[int, Field(description="recorded runs per mode")] = 5,
        warmup: Annotated[int, Field(description="unrecorded rounds first")] = 1,
        modes: Annotated[list[str] | None, Field(description="subset of floor, original, original_arrow, candidate")] = None,
        master: Annotated[str | None, Field(description="Spark master URL, e.g. spark://host:7077; default aether.toml's [benchmark] master, else local[*]")] = None,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
    ) -> benchmarking.RunBenchmarkResult:
        return await _in_thread(ctx, partial(benchmarking.run_benchmark, sandbox, pool, workspace, candidate, rows, repeats, warmup, modes, master, spec))

    @server.tool(
        name="tune_arrow_batch",
        title="Sweep the Arrow batch size for a vectorized candidate",
        annotations=_annotations(read_only=False, idempotent=False),
        description=(
            "Constraints: a vectorized (or, on a GPU, kernel) candidate that passes byte_compare on 2000 hidden rows; "
            "sizes: 1 to 12 values of spark.sql.execution.arrow.maxRecordsPerBatch (default 1000, 10000, 50000, "
            "100000, 500000); rows 1..50000000; repeats 1..50. Times the candidate (and a pandas UDF original) at each "
            "size in the benchmark's own Spark application, interleaved after a warm-up round, with the peak memory of "
            "the Python workers. Returns the points, the fastest size per target, the setting to use in the job, and "
            "artifacts {json, chart}. Reports progress; cancelling stops it."
        ),
    )
    async def tune_arrow_batch(
        workspace: WorkspaceArg,
        candidate: Annotated[str, Field(description="the candidate's name (file candidate/<name>.py)")],
        ctx: Context,
        sizes: Annotated[list[int] | None, Field(description="batch sizes to try")] = None,
        rows: Annotated[int, Field(description="rows of generated data")] = 1_000_000,
        repeats: Annotated[int, Field(description="recorded runs per size")] = 3,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
    ) -> benchmarking.TuneArrowBatchResult:
        return await _in_thread(ctx, partial(benchmarking.tune_arrow_batch, sandbox, pool, workspace, candidate, sizes, rows, repeats, None, spec))

    @server.tool(
        name="micro_benchmark",
        title="Time the candidate's entry point alone against the original function",
        annotations=_annotations(read_only=False, idempotent=False),
        description=(
            "Constraints: a vectorized or kernel candidate (sql has no entry point of its own: use run_benchmark); rows "
            "1..50000000; repeats 1..50. In a child process without Spark, on generated data in the form Spark hands it "
            "over: evaluate(*series) vs the original function mapped over the rows (a pandas UDF on whole Series), one "
            "warm-up each, then alternating; device work synchronized on a GPU. Seconds, not proof of speed in the job: "
            "for fast iteration while optimizing. Returns medians, every run, the speedup and the backend."
        ),
    )
    async def micro_benchmark(
        workspace: WorkspaceArg,
        candidate: Annotated[str, Field(description="the candidate's name (file candidate/<name>.py)")],
        ctx: Context,
        rows: Annotated[int, Field(description="rows of generated data")] = 100_000,
        repeats: Annotated[int, Field(description="timed calls of each")] = 5,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
    ) -> benchmarking.MicroBenchmarkResult:
        return await _in_thread(ctx, partial(benchmarking.micro_benchmark, sandbox, workspace, candidate, rows, repeats, spec))

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
            "(omit to_id to compare with the current files), with added/removed/modified lists; capped at 64 KiB."
        ),
    )
    def diff(
        workspace: WorkspaceArg,
        from_id: SnapshotIdArg,
        to_id: Annotated[int | None, Field(description="a later snapshot id; omit for the current files")] = None,
    ) -> snapshots.DiffResult:
        return snapshots.diff(sandbox, workspace, from_id, to_id)

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

    return server
