"""record_deviation and remove_deviation: admit a behaviour difference openly instead of hiding it."""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

from aether_mcp.path_guard import SandboxRoot
from aether_mcp.predicates import Predicate
from aether_mcp.workspace import Workspace, deviations
from aether_mcp.workspace.candidates import check_target
from aether_mcp.workspace.deviations import Deviation

MAX_ULP = 1_000_000


class DeviationsResult(BaseModel):
    candidate: str
    deviations: list[Deviation]
    note: str = "every comparison, audit and report of this candidate lists these deviations"


MAX_TEXT = 1_000  # characters of a deviation's summary or reason


def record_deviation(
    root: SandboxRoot,
    workspace: str,
    candidate: str,
    summary: str,
    reason: str,
    applies_to: str | None = None,
    ulp_tolerance: int | None = None,
    returns_where_original_raises: bool = False,
) -> DeviationsResult:
    opened = Workspace.open_intact(root, workspace)
    name = _candidate_name(opened, candidate)
    summary, reason = (summary or "").strip(), (reason or "").strip()
    if len(summary) < 10 or len(reason) < 10:
        raise ToolError("summary and reason must each say something (at least 10 characters): what differs, and why it is acceptable.")
    if len(summary) > MAX_TEXT or len(reason) > MAX_TEXT:
        raise ToolError(f"summary and reason must each fit in {MAX_TEXT:,} characters (every comparison, audit and report repeats them); say it shorter.")
    if returns_where_original_raises and ulp_tolerance is not None:
        raise ToolError(
            "returns_where_original_raises and ulp_tolerance are separate deviations: record one with "
            "returns_where_original_raises (and applies_to if only some rows), and another with ulp_tolerance."
        )
    if applies_to is None and ulp_tolerance is None and not returns_where_original_raises:
        raise ToolError(
            "a deviation must declare what it relaxes: ulp_tolerance (floats this many ULPs apart count as equal), "
            "applies_to (a predicate over the arguments: those rows are out of scope), both (a tolerance on those rows), "
            "or returns_where_original_raises=true (where the original raises, the candidate may return a value; with "
            "applies_to, only on those rows)."
        )
    if ulp_tolerance is not None and not 1 <= ulp_tolerance <= MAX_ULP:
        raise ToolError(f"ulp_tolerance must be between 1 and {MAX_ULP}.")
    if applies_to is not None:
        Predicate(applies_to, [a.name for a in opened.config.udf.args])  # refuses what cannot be evaluated safely
    with opened.lock():
        existing = deviations.load(opened, name)
        existing.append(deviations.new_deviation(existing, summary, reason, applies_to, ulp_tolerance, returns_where_original_raises))
        deviations.save(opened, name, existing)
    return DeviationsResult(candidate=name, deviations=existing)


def remove_deviation(root: SandboxRoot, workspace: str, candidate: str, deviation_id: str) -> DeviationsResult:
    opened = Workspace.open_intact(root, workspace)
    name = _candidate_name(opened, candidate)
    with opened.lock():
        existing = deviations.load(opened, name)
        kept = [d for d in existing if d.deviation_id != deviation_id]
        if len(kept) == len(existing):
            ids = ", ".join(d.deviation_id for d in existing) or "none"
            raise ToolError(f"candidate {name!r} has no deviation {deviation_id!r}; its deviations: {ids}.")
        deviations.save(opened, name, kept)
    return DeviationsResult(candidate=name, deviations=kept)


def _candidate_name(workspace: Workspace, candidate: str) -> str:
    target = check_target(workspace, candidate if candidate.startswith("candidate:") else f"candidate:{candidate}")
    return target.removeprefix("candidate:")
