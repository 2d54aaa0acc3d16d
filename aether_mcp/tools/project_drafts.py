"""draft_project: every UDF of a project the translator can draft, drafted in a workspace of its own and judged.

It is the project-scale form of init_workspace, draft_candidate and byte_compare: for each UDF
scan_project finds convertible and draftable, a workspace under `into`, the draft, and the judge's
verdict on it. The result says how many UDFs convert automatically, proven equal, before an agent
spends a call on them; each workspace is then an ordinary one (audit_candidate, run_benchmark, apply).
Long: start it with start_run.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.progress_report import Progress
from aether_mcp.tools import byte_compare, drafting, project_scan, workspaces

MAX_UDFS = 40  # drafted and judged in one call; the rest are named in `left_out`
MAX_LEFT_OUT = 20
MIN_HIDDEN_ROWS = 1_000  # the default [compare] min_compared_rows: "proven equal" is never said on fewer


class ProjectDraft(BaseModel):
    udf: str
    file: str
    line: int
    workspace: str | None = Field(description="the workspace made for it, or None where none was made")
    outcome: Literal["equal", "differs", "unproven", "refused", "skipped", "failed"] = Field(
        description="equal: byte_compare proved the draft equal; differs: it found a mismatch; unproven: too little evidence for a verdict "
        "(the original returned a value on too few hidden rows); refused: the translator refused it; skipped: its workspace folder "
        "was taken; failed: a step raised (see detail)"
    )
    detail: str


class DraftProjectResult(BaseModel):
    folder: str
    udfs_found: int
    convertible: int
    draftable: int = Field(description="UDFs the scan says draft_candidate drafts")
    proven_equal: int = Field(description="drafts byte_compare proved equal to their original")
    summary: str
    udfs: list[ProjectDraft]
    left_out: list[str] = Field(description=f"draftable UDFs past the first {MAX_UDFS}, not drafted in this call (the first {MAX_LEFT_OUT}, then a count)")
    next_steps: list[str]
    duration_s: float


def draft_project(
    root: SandboxRoot,
    workers: WorkerPool,
    path: str = ".",
    into: str = "aether_workspaces/drafts",
    hidden_rows: int = 2_000,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> DraftProjectResult:
    started = time.monotonic()
    if hidden_rows < MIN_HIDDEN_ROWS:
        raise ToolError(f"hidden_rows {hidden_rows}: a project's drafts are proven on at least {MIN_HIDDEN_ROWS} hidden rows each; pass {MIN_HIDDEN_ROWS} or more.")
    into = root.relative(root.resolve(into, what="into"))  # refused before anything is made when it leads outside the root
    report = progress or (lambda done, total, message: None)
    report(0, None, f"scanning {path}")
    pages = [project_scan.scan_project(root, path)]
    while pages[-1].next_offset is not None:
        pages.append(project_scan.scan_project(root, path, pages[-1].next_offset))
    found = [u for page in pages for u in page.udfs]
    draftable = [u for u in found if u.convertible and u.draft and u.draft.startswith("drafts")]
    taken = draftable[:MAX_UDFS]
    results: list[ProjectDraft] = []
    names: set[str] = set()
    for index, udf in enumerate(taken):
        if cancel is not None and cancel.is_set():
            raise ToolError(f"draft_project was cancelled after {index} of {len(taken)} UDFs; the workspaces made so far stay under {into}.")
        report(index, len(taken), f"{udf.name} ({udf.file}:{udf.line}): workspace, draft, byte_compare")
        folder = _folder_name(udf.name, udf.line, names)
        results.append(_one(root, workers, udf, f"{into}/{folder}" if into else folder, hidden_rows, cancel))
    equal = sum(r.outcome == "equal" for r in results)
    report(len(taken), len(taken), "done")
    convertible = sum(u.convertible for u in found)
    summary = (
        f"{equal} of {convertible} convertible UDFs convert automatically, proven equal by byte_compare ({len(found)} UDFs found, "
        f"{len(draftable)} drafted)"
    )
    return DraftProjectResult(
        folder=pages[0].folder,
        udfs_found=len(found),
        convertible=convertible,
        draftable=len(draftable),
        proven_equal=equal,
        summary=summary,
        udfs=results,
        left_out=[f"{u.name} ({u.file}:{u.line})" for u in draftable[MAX_UDFS : MAX_UDFS + MAX_LEFT_OUT]]
        + ([f"and {len(draftable) - MAX_UDFS - MAX_LEFT_OUT} more: call again with a sub-folder as `path`"] if len(draftable) > MAX_UDFS + MAX_LEFT_OUT else []),
        next_steps=[
            "for each equal draft: audit_candidate(workspace, 'draft'), then run_benchmark and apply_conversion as for any candidate",
            "for a draft that differs: read its mismatches with byte_compare(workspace, 'draft') and edit candidate/draft.py",
            "for the other convertible UDFs: init_workspace with the scan's init_call, and convert by hand",
        ],
        duration_s=round(time.monotonic() - started, 3),
    )


def _folder_name(name: str, line: int, names: set[str]) -> str:
    base = re.sub(r"\W+", "_", name).strip("_") or "udf"
    folder = base if base not in names else f"{base}_{line}"
    names.add(folder)
    return folder


def _one(root: SandboxRoot, workers: WorkerPool, udf: project_scan.ScannedUdf, workspace: str, hidden_rows: int, cancel: threading.Event | None) -> ProjectDraft:
    where = {"udf": udf.name, "file": udf.file, "line": udf.line}
    target = root.path / workspace
    if target.exists() and any(target.iterdir()):
        return ProjectDraft(**where, workspace=None, outcome="skipped", detail=f"{workspace} is not empty: judge the draft there with byte_compare, or remove it and call again")
    try:
        made = workspaces.init_workspace(root, udf.file, f"{udf.name}:{udf.line}", workspace=workspace)
        drafted = drafting.draft_candidate(root, made.workspace)
        if not drafted.drafted:
            refusal = drafted.refused
            return ProjectDraft(**where, workspace=made.workspace, outcome="refused", detail=f"{refusal.outside_subset} (line {refusal.line})" if refusal else "refused")
        compared = byte_compare.byte_compare(root, workers, made.workspace, "draft", hidden_rows, cancel=cancel)
    except ToolError as exc:
        return ProjectDraft(**where, workspace=workspace if target.exists() else None, outcome="failed", detail=str(exc)[:300])
    if compared.equal:
        return ProjectDraft(**where, workspace=made.workspace, outcome="equal", detail=f"byte_compare: equal on {compared.rows_compared} rows")
    if compared.equal is None:
        return ProjectDraft(**where, workspace=made.workspace, outcome="unproven", detail=f"byte_compare: no verdict: {compared.evidence.note or 'too little evidence'}"[:300])
    first = compared.mismatches[0] if compared.mismatches else None
    shown = f"first mismatch: args {first.args}, expected {first.expected}, got {first.actual}" if first else (compared.error or "not equal")
    return ProjectDraft(**where, workspace=made.workspace, outcome="differs", detail=f"byte_compare: {str(shown)[:300]}")
