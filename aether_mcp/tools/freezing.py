"""freeze_tests and unfreeze_tests: fix the specification once it is strong, and log every change of mind."""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import paging
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import workspaces
from aether_mcp.workspace import Workspace, frozen_tests

PHASE_ONE_GATES = ("tests_pass_on_original", "branch_coverage", "mutation_score")


class FreezeResult(BaseModel):
    frozen_at: str
    cases: int
    files: list[str] = Field(description="test files whose content is now fixed (the first 100)")
    files_left_out: int = Field(0, description="files fixed but not listed to keep the result small; workspace_status counts them")
    note: str = "run_tests on candidates and byte_compare refuse while these files differ; unfreeze_tests(workspace, reason) is logged"


class UnfreezeResult(BaseModel):
    unfrozen_at: str
    reason: str
    changed_since_freeze: list[str] = Field(description="test files changed while frozen (the first 100)")
    changed_left_out: int = Field(0, description="changed files not listed")
    log: list[dict[str, Any]] = Field(description="the freezes and unfreezes of this workspace, newest last (an entry's long lists described)")
    log_left_out: int = Field(0, description="older entries not shown")


def freeze_tests(root: SandboxRoot, workspace: str) -> FreezeResult:
    opened = Workspace.open_intact(root, workspace)
    if frozen_tests.freeze_record(opened) is not None:
        raise ToolError("the tests are already frozen; workspace_status shows since when.")
    gates = {g.name: g for g in workspaces.workspace_status(root, workspace).gates}
    open_gates = [f"{name} ({gates[name].status}: {gates[name].detail})" for name in PHASE_ONE_GATES if gates[name].status != "pass"]
    if open_gates:
        raise ToolError(
            "the phase-1 gates do not all hold yet: " + "; ".join(open_gates) + ". Run run_tests(workspace, 'original'), "
            "coverage_report and mutation_score on the current tests (suggest_inputs and record_cases close gaps; justify explains the rest)."
        )
    with opened.lock():
        body = frozen_tests.freeze(opened)
    files, left_out = paging.fit(sorted(body["files"]))
    return FreezeResult(frozen_at=body["time"], cases=body["cases"], files=files, files_left_out=left_out)


def unfreeze_tests(root: SandboxRoot, workspace: str, reason: str) -> UnfreezeResult:
    opened = Workspace.open_intact(root, workspace)
    reason = (reason or "").strip()
    if len(reason) < 15:
        raise ToolError("reason is too short; say why the frozen tests must change (at least 15 characters). It is logged and reported.")
    if frozen_tests.freeze_record(opened) is None:
        raise ToolError("the tests are not frozen; nothing to unfreeze.")
    with opened.lock():
        entry = frozen_tests.unfreeze(opened, reason)
    changed, changed_left_out = paging.fit(entry["changed"])
    newest, log_left_out = paging.fit([paging.abridged(item) for item in reversed(frozen_tests.freeze_log(opened))], budget=paging.LIST_BYTES * 2)
    return UnfreezeResult(
        unfrozen_at=entry["time"], reason=reason, changed_since_freeze=changed, changed_left_out=changed_left_out, log=newest[::-1], log_left_out=log_left_out
    )
