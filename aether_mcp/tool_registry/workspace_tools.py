"""Finding UDFs, creating workspaces, reading and writing their files."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from aether_mcp import background_runs
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tool_registry.tool_calls import WorkspaceArg, in_thread, scoped_call, tool_annotations
from aether_mcp.tools import (
    files,
    project_scan,
    workspaces,
)


def register(server: MCPServer, sandbox: SandboxRoot, pool: WorkerPool, runs: background_runs.BackgroundRuns) -> None:
    @server.tool(
        name="scan_project",
        title="Find every Python UDF in a project and rank what converting each would save",
        annotations=tool_annotations(read_only=True, idempotent=True),
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
        return await in_thread(ctx, scoped_call(project_scan.scan_project, sandbox, path, offset))

    @server.tool(
        name="init_workspace",
        title="Create a conversion workspace for one UDF",
        annotations=tool_annotations(read_only=False),
        description=(
            "Constraints: `source` is a Python file inside the root, parsed, never run. `udf` names one UDF in it "
            "(@udf/@pandas_udf function, `name = udf(fn, type)`, a spark.udf.register name, or `name = factory(literals)`; "
            "`name:LINE` picks one of several). Argument types come from hints or `arg_types` ({\"amount\": \"double\"}), else refused. "
            "Arguments passed only as literals keep those values in generated rows unless named in `whole_domain`. `workspace` "
            "(default aether_workspaces/<udf>) must be new or empty.\n"
            "Extracts the UDF with the imports, constants and helpers it uses into original/udf.py (protected), freezes "
            "aether.toml, adds tests/ and candidate/ templates, takes snapshot 0. It first runs on 200 generated rows in a "
            "child: a failing import or lost name is refused. Returns the path, signature and `notes`."
        ),
    )
    def init_workspace(
        source: Annotated[str, Field(description="the PySpark job's .py file, relative to the server root")],
        udf: Annotated[str, Field(description="the UDF's name (or name:LINE)")],
        arg_types: Annotated[dict[str, str] | None, Field(description="Spark DDL type per argument name, e.g. {\"age\": \"int\"}")] = None,
        workspace: Annotated[str | None, Field(description="folder for the new workspace, inside the root")] = None,
        return_type: Annotated[str | None, Field(description="override the return type (Spark DDL), when the source's cannot be read")] = None,
        benchmark_master: Annotated[
            str | None, Field(description="Spark master for the benchmarks, frozen as [benchmark] master; default local[*]")
        ] = None,
        backend: Annotated[
            Literal["auto", "cpu", "gpu"], Field(description="where vectorized/kernel candidates run by default, frozen as [backend] use; auto: a GPU if one can run them")
        ] = "auto",
        whole_domain: Annotated[list[str] | None, Field(description="arguments the job passes only as literals, drawn over their whole type anyway")] = None,
    ) -> workspaces.InitWorkspaceResult:
        return workspaces.init_workspace(
            sandbox, source, udf, arg_types=arg_types, workspace=workspace, return_type=return_type, benchmark_master=benchmark_master, backend=backend,
            whole_domain=whole_domain,
        )

    @server.tool(
        name="workspace_status",
        title="Where a workspace stands",
        annotations=tool_annotations(read_only=True, idempotent=True),
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
        annotations=tool_annotations(read_only=True, idempotent=True),
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
        annotations=tool_annotations(read_only=True, idempotent=True),
        description=(
            "Read-only; confined to the workspace; text files only. Protected files "
            "(original/udf.py, aether.toml) can be read; of .aether/ only artifacts (runs/, bench/, profiles/, report/, validate/). "
            "Returns one page of the text (at most 60,000 bytes as sent: 30,000 characters of plain text, whole lines) from `offset` or `start_line`, "
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
        annotations=tool_annotations(read_only=False, destructive=True, idempotent=True),
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
