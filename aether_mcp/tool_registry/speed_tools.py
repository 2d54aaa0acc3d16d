"""Phases 3 and 4 and after: data, benchmarks, validation on data, profiling, optimizing, the report and applying it."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from aether_mcp import background_runs
from aether_mcp.bench_data import GenerateDataResult
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tool_registry.tool_calls import BackendArg, CandidateArg, WorkspaceArg, in_thread, tool_annotations
from aether_mcp.tools import (
    benchmarking,
    conversion_report,
    data_validation,
    job_conversion,
    optimization,
    profiling,
)


def register(server: MCPServer, sandbox: SandboxRoot, pool: WorkerPool, runs: background_runs.BackgroundRuns) -> None:
    @server.tool(
        name="generate_data",
        title="Generate benchmark data for the UDF's arguments",
        annotations=tool_annotations(read_only=False, idempotent=True),
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
        return await in_thread(ctx, lambda cancel, progress: benchmarking.generate_data(sandbox, workspace, rows, seed, spec, progress))

    @server.tool(
        name="run_benchmark",
        title="Benchmark original vs candidate vs the no-UDF floor in Spark",
        annotations=tool_annotations(read_only=True, idempotent=False, open_world=True),
        description=(
            "Constraints: the candidate must pass byte_compare on 2000 hidden rows first; kernel candidates need the GPU backend. "
            "Data as generate_data makes it (`spec`); a separate Spark application (`master`, else [benchmark] master, else "
            "local[*]) applies each mode, every column to the noop sink, modes shuffled each round. Returns per-mode "
            "median/min/max/cv/rows_per_s, failed modes, speedup (median of per-round ratios) with a 95% bootstrap speedup_ci "
            "(rounds until within precision or time_budget_s), overhead_eliminated, backend, gpu_verified, environment, artifacts. "
            "Cancellable."
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
        master: Annotated[str | None, Field(description="Spark master URL (remote: only after an audit_candidate PASS of the current bytes); default [benchmark] master, else local[*]")] = None,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
        backend: BackendArg = None,
        precision: Annotated[float, Field(gt=0, le=1, description="target half-width of the speedup's 95% interval, as a share of the speedup")] = benchmarking.DEFAULT_PRECISION,
        time_budget_s: Annotated[float | None, Field(ge=0, le=3600, description="most seconds of extra rounds; default the first rounds' time, at most 60")] = None,
    ) -> benchmarking.RunBenchmarkResult:
        return await in_thread(
            ctx, partial(benchmarking.run_benchmark, sandbox, pool, workspace, candidate, rows, repeats, warmup, modes, master, spec, backend=backend, precision=precision, time_budget_s=time_budget_s)
        )

    @server.tool(
        name="validate_on_data",
        title="Compare original and candidate over the user's own data, inside Spark",
        annotations=tool_annotations(read_only=True, idempotent=False, open_world=True),
        description=(
            "Constraints: not for aggregations; data: Parquet, CSV, JSON or ORC inside the root, or a URI the master reads. "
            "Three Spark applications on `master`: the original over the data's argument columns (`columns`, in argument order, "
            "cast to the declared types), the candidate confined over the same numbered rows, then a comparison in Spark "
            "as byte_compare compares (recorded ULPs, raises matched). Returns "
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
        master: Annotated[str | None, Field(description="Spark master URL (remote: only after an audit_candidate PASS of the current bytes); default [benchmark] master, else local[*]")] = None,
        limit: Annotated[int | None, Field(ge=1, le=10_000_000_000, description="compare at most this many rows")] = None,
    ) -> data_validation.ValidateOnDataResult:
        return await in_thread(ctx, lambda cancel, progress: data_validation.validate_on_data(sandbox, workspace, candidate, data, columns, format, master, limit, progress=progress, cancel=cancel))

    @server.tool(
        name="tune_arrow_batch",
        title="Sweep the Arrow batch size for a vectorized candidate",
        annotations=tool_annotations(read_only=True, idempotent=False, open_world=True),
        description=(
            "Constraints: a vectorized (on a GPU, kernel) candidate that passes byte_compare on 2000 hidden rows; 1 to 12 values "
            "of spark.sql.execution.arrow.maxRecordsPerBatch (default 1000 to 500000). Times the candidate (and a pandas UDF "
            "original) at each size in the benchmark's application, interleaved, with the Python workers' peak memory. Returns "
            "the points, the fastest size, the setting to use, and artifacts {json, chart}. Cancellable."
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
        return await in_thread(ctx, partial(benchmarking.tune_arrow_batch, sandbox, pool, workspace, candidate, sizes, rows, repeats, None, spec))

    @server.tool(
        name="micro_benchmark",
        title="Time the candidate alone against the original, in seconds",
        annotations=tool_annotations(read_only=True, idempotent=False),
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
        rows: Annotated[int | None, Field(ge=1, le=50_000_000, description="rows of generated data; default 100000, 200000 for a sql candidate")] = None,
        repeats: Annotated[int, Field(ge=1, le=50, description="timed calls of each")] = 5,
        spec: Annotated[dict[str, dict[str, Any]] | None, Field(description="data recipe per argument, as in generate_data")] = None,
        backend: BackendArg = None,
    ) -> benchmarking.MicroBenchmarkResult:
        return await in_thread(ctx, partial(benchmarking.micro_benchmark, sandbox, workspace, candidate, rows, repeats, spec, backend=backend, workers=pool))

    @server.tool(
        name="nsys_profile",
        title="Profile a candidate: nsys on a GPU, Python's profiler on CPU, the Spark plan for sql",
        annotations=tool_annotations(read_only=True, idempotent=False),
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
        return await in_thread(ctx, partial(profiling.nsys_profile, sandbox, pool, workspace, candidate, rows, spec))

    @server.tool(
        name="try_optimization",
        title="One verified optimize step: keep the change only if clean, equal and faster",
        annotations=tool_annotations(read_only=False, destructive=True, idempotent=False, open_world=True),
        description=(
            "Constraints: the tests must be frozen; `label` says what changed. The first call records the candidate as the "
            "best (after an audit_candidate PASS). Each later call snapshots, audits, then times the candidate against the best "
            "in one interleaved Spark run; kept only if clean, equal and faster with the whole 95% interval above 1 + min_gain, "
            "else candidate/ is restored to the best (the attempt stays in its snapshot). Returns accepted, reverted, reason, "
            "speedup and interval, advice (stop after 10 steps or 3 rejections in a row); appends to .aether/journal.jsonl."
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
        return await in_thread(ctx, partial(optimization.try_optimization, sandbox, pool, workspace, candidate, label, min_gain, rows, repeats, spec, hidden_rows))

    @server.tool(
        name="report",
        title="Write the conversion report",
        annotations=tool_annotations(read_only=True, idempotent=True),
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
        annotations=tool_annotations(read_only=False, idempotent=True),
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
        return await in_thread(ctx, lambda cancel, progress: job_conversion.apply_conversion(sandbox, workspace, candidate))
