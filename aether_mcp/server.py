"""The MCP layer, and only that: the server, its instructions, prompts and resources.

Every tool is a plain function in `aether_mcp.tools`; its registration (title, annotations,
description, arguments) is in aether_mcp.tool_registry, one module per family, which binds it to
one server root and one worker pool. The families register in a fixed order, which is the order
of `tools/list`.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import Field

from aether_mcp import __version__, artifact_links, background_runs, prompts, strict_wire
from aether_mcp.path_guard import SandboxRoot, root_problem
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tool_registry import history_tools, proof_tools, spec_tools, speed_tools, workspace_tools
from aether_mcp.tool_registry.tool_calls import T
from aether_mcp.tools import (
    conversion_report,
)
from aether_mcp.workspace import SparkConfig
from aether_mcp.workspace.derivation import DEFAULT_SPARK_CONF

INSTRUCTIONS = """\
aether-mcp rewrites a PySpark Python UDF as Spark SQL, vectorized pandas/NumPy (also on cuDF/CuPy)
or a CUDA kernel, and proves them equal as Spark runs them. scan_project ranks a project's UDFs.
Four phases, each gated:
1. Specify: init_workspace(source, udf) -> record_cases / write tests/cases.py -> run_tests(ws,
   "original") -> coverage_report, mutation_score (suggest_inputs, justify) -> audit_tests ->
   freeze_tests. Gate: tests pass on the original, every line and branch covered or justified,
   mutation score >= 0.8.
2. Convert: draft_candidate(ws) (sql, where it can) or write candidate/<name>.py (TARGET
   "sql" with build(*cols), or "vectorized"/"kernel" with evaluate(*series); `from
   aether_mcp.backend import xp, array, series` serves CPU and GPU)
   -> run_tests(ws, "candidate:<name>") -> byte_compare -> audit_candidate. Gate: PASS (no cheat
   finding, equal on fresh hidden rows).
3. Benchmark: run_benchmark (original, candidate, no-UDF floor; speedup with a 95% CI).
4. Optimize: nsys_profile -> try_optimization(ws, name, label): the first call records the best;
   later ones keep a change only if clean, equal and faster, else restore the best. Stop after 10
   steps or 3 rejections in a row. Then report(ws): what to ship and its wiring.
Then validate_on_data(ws, name, data) on real data, apply_conversion(ws, name).
Rules: never weaken frozen tests (unfreeze_tests is logged); declare real differences with
record_deviation; snapshot/revert/diff keep work safe; workspace_status shows where a ws stands.
Prompts: convert_udf and one per phase. Resources: aether://notes/{semantic-traps,
spark-functions,gpu-idioms}, aether://workspaces/{name}/report, aether://schemas/{tool}.
Long calls: start_run(tool, arguments) -> run_id; run_status(run_id, wait_s), cancel_run.
Only files inside the server root are used."""

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

    workspace_tools.register(server, sandbox, pool, runs)
    spec_tools.register(server, sandbox, pool, runs)
    proof_tools.register(server, sandbox, pool, runs)
    speed_tools.register(server, sandbox, pool, runs)
    history_tools.register(server, sandbox, pool, runs)

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
            "A file under the workspace's .aether/runs, bench, profiles or report folder, one page of at most 60,000 bytes as sent "
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
