"""Recorded deviations: behaviour differences a candidate admits, relaxing the comparison exactly as declared.

Stored per candidate in deviations/<candidate>.json (an agent file, so snapshots carry it). A
deviation is a float tolerance in ULPs, a class of inputs out of scope (a predicate over the
arguments), a tolerance on such a class, or leave to return a value where the original raises
(on every row, or on the rows a predicate selects). Every comparison lists the deviations it
applied.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError

from aether_mcp.predicates import Predicate
from aether_mcp.workspace import Workspace

DEVIATIONS_DIR = "deviations"


class Deviation(BaseModel):
    deviation_id: str
    summary: str
    reason: str
    applies_to: str | None = Field(None, description="predicate over the arguments; None: every row")
    ulp_tolerance: int | None = Field(None, description="floats this many ULPs apart count as equal; None with applies_to: those rows are out of scope")
    returns_where_original_raises: bool = Field(False, description="where the original raises (on the rows applies_to selects, or on every row), the candidate may return a value instead of failing")
    created: str

    def describe(self) -> str:
        where = f" where {self.applies_to}" if self.applies_to else ""
        if self.returns_where_original_raises:
            return f"{self.deviation_id}: where the original raises{' and ' + self.applies_to if self.applies_to else ''}, the candidate may return a value ({self.summary})"
        what = f"floats within {self.ulp_tolerance} ULP count as equal" if self.ulp_tolerance else "rows are out of scope (not compared)"
        return f"{self.deviation_id}: {what}{where} ({self.summary})"


class AppliedDeviations:
    """The deviations of one candidate, ready to apply to argument rows."""

    def __init__(self, deviations: list[Deviation], arg_names: list[str]) -> None:
        self.deviations = deviations
        self.predicates = [Predicate(d.applies_to, arg_names) if d.applies_to else None for d in deviations]

    def for_row(self, row: list[Any]) -> tuple[bool, int]:
        """(excluded, ulp tolerance) for a row."""
        tolerance = 0
        for deviation, predicate in zip(self.deviations, self.predicates):
            if deviation.returns_where_original_raises or (predicate is not None and not predicate(row)):
                continue
            if deviation.ulp_tolerance is None:
                return True, 0
            tolerance = max(tolerance, deviation.ulp_tolerance)
        return False, tolerance

    def may_return_where_original_raises(self, row: list[Any]) -> str | None:
        """The id of a deviation that lets the candidate return a value on this row where the original raised."""
        for deviation, predicate in zip(self.deviations, self.predicates):
            if deviation.returns_where_original_raises and (predicate is None or predicate(row)):
                return deviation.deviation_id
        return None


def path_for(workspace: Workspace, candidate: str) -> Path:
    return workspace.path / DEVIATIONS_DIR / f"{candidate}.json"


def load(workspace: Workspace, candidate: str) -> list[Deviation]:
    path = path_for(workspace, candidate)
    if not path.exists():
        return []
    try:
        return [Deviation.model_validate(item) for item in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, TypeError, ValidationError) as exc:
        raise ToolError(f"{DEVIATIONS_DIR}/{candidate}.json is not a valid deviation list ({exc.__class__.__name__}); record deviations with record_deviation, or revert the file.") from None


def save(workspace: Workspace, candidate: str, deviations: list[Deviation]) -> None:
    path = path_for(workspace, candidate)
    path.parent.mkdir(exist_ok=True)
    if deviations:
        path.write_text(json.dumps([d.model_dump() for d in deviations], indent=2), encoding="utf-8")
    elif path.exists():
        path.unlink()


def new_deviation(existing: list[Deviation], summary: str, reason: str, applies_to: str | None, ulp_tolerance: int | None, returns_where_original_raises: bool = False) -> Deviation:
    number = max([int(d.deviation_id.split("-")[-1]) for d in existing if d.deviation_id.split("-")[-1].isdigit()] or [0]) + 1
    return Deviation(
        deviation_id=f"dev-{number}",
        summary=summary,
        reason=reason,
        applies_to=applies_to,
        ulp_tolerance=ulp_tolerance,
        returns_where_original_raises=returns_where_original_raises,
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
