"""record_cases: the original's real outputs, recorded as behaviour cases in tests/cases.py."""

from __future__ import annotations

import zoneinfo
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import call_scope, case_file, paging
from aether_mcp.input_json import from_json_row, session_naive, to_json_row
from aether_mcp.judge.case_literals import read_case_rows
from aether_mcp.nested_values import typed
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.spark_types import parse_type
from aether_mcp.wire import value_codec
from aether_mcp.wire.value_codec import Raised
from aether_mcp.workspace import TESTS_DIR, Workspace
from aether_mcp.workspace.frozen_tests import refuse_if_frozen

MAX_ROWS = 1000


class RecordedCase(BaseModel):
    args: list[Any] = Field(description="the row, in record_cases JSON form")
    expected: str | None = Field(None, description="what the original returned (Python repr)")
    raises: str | None = Field(None, description="the exception the original raised instead")


class RecordCasesResult(BaseModel):
    workspace: str
    recorded: list[RecordedCase] = Field(description="the rows recorded, with what the original did (the first 100, fewer when their values are long)")
    recorded_left_out: int = Field(description="rows recorded but not shown here to keep the result small; tests/cases.py has every one (read_file)")
    duplicates: list[list[Any]] = Field(description="rows already in tests/cases.py, not recorded again (the first ones when many)")
    duplicates_left_out: int = Field(description="duplicate rows not shown")
    cases_total: int
    path: str = "tests/cases.py"


def record_cases(root: SandboxRoot, workers: WorkerPool, workspace: str, inputs: list[Any], why: str | None = None) -> RecordCasesResult:
    opened = Workspace.open_intact(root, workspace)
    refuse_if_frozen(opened, "record_cases")
    if not isinstance(inputs, list) or not inputs:
        raise ToolError("inputs is empty; give a list of argument rows, e.g. [[65, 100.0, \"gold\"]] (suggest_inputs proposes some).")
    if len(inputs) > MAX_ROWS:
        raise ToolError(f"inputs has {len(inputs)} rows; record at most {MAX_ROWS} per call.")
    if why is not None and len(why) > 300:
        raise ToolError("why is longer than 300 characters; say in one line what the rows pin.")
    args = opened.config.udf.args
    types = [parse_type(a.type) for a in args]
    zone = zoneinfo.ZoneInfo(opened.config.spark.conf.get("spark.sql.session.timeZone", "UTC"))
    rows = [[session_naive(value, zone) for value in from_json_row(row, types, [a.name for a in args], index)] for index, row in enumerate(inputs)]
    cases_path = opened.path / TESTS_DIR / "cases.py"
    # Cases hold a struct as a plain dict; marked by type, it compares with the new rows' structs.
    existing = {value_codec.dumps([typed(value, data_type) for value, data_type in zip(row, types)]) for row in read_case_rows(cases_path)}
    fresh, duplicates, seen = [], [], set(existing)
    for row in rows:
        key = value_codec.dumps(row)
        if key in seen:
            duplicates.append(to_json_row(row))
        else:
            seen.add(key)
            fresh.append(row)
    outputs: list[Any] = []
    if fresh:
        call_scope.report(0, 2, f"running the original on {len(fresh)} new row(s) through Spark ({len(duplicates)} already recorded; the first call starts a Spark worker)")
        try:
            outputs = workers.evaluate("reference", opened, "original", fresh).outputs
        except EvaluationFailed as exc:
            raise ToolError(f"the original could not be evaluated on these rows: {exc}") from None
    entries, recorded = [], []
    for row, output in zip(fresh, outputs):
        entry: dict[str, Any] = {"args": row, "why": why or "recorded from the original"}
        if isinstance(output, Raised):
            entry["raises"] = output.type
            recorded.append(RecordedCase(args=to_json_row(row), raises=str(output)))
        else:
            entry["expected"] = output
            recorded.append(RecordedCase(args=to_json_row(row), expected=repr(output)))
        entries.append(entry)
    if entries:
        call_scope.report(1, 2, f"appending {len(entries)} case(s) to tests/cases.py")
        with opened.lock():
            case_file.append_cases(cases_path, entries)
        call_scope.report(2, 2, "done")
    shown, recorded_left_out = paging.fit(recorded, budget=paging.PAGE_BYTES // 2)
    shown_duplicates, duplicates_left_out = paging.fit(duplicates)
    return RecordCasesResult(
        workspace=str(opened.path),
        recorded=shown,
        recorded_left_out=recorded_left_out,
        duplicates=shown_duplicates,
        duplicates_left_out=duplicates_left_out,
        cases_total=len(read_case_rows(cases_path)),
    )

