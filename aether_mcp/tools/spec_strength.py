"""coverage_report, mutation_score, suggest_inputs, justify: measure how well the cases pin the original.

Both measures run on the cases of tests/cases.py (the specification byte_compare and the gates
use), with the arguments exactly as Spark delivers them to the UDF (captured through the
reference worker), and call the original and its mutants as plain Python in a process of their
own. Results are kept under .aether/runs/ and judged current while original/udf.py and
tests/cases.py are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
import zoneinfo
from pathlib import Path
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import call_scope, draws, paging
from aether_mcp.input_json import session_naive, to_json_row
from aether_mcp.judge.case_literals import read_case_rows
from aether_mcp.judge.edge_inputs import edge_rows
from aether_mcp.judge.hidden_inputs import hidden_rows, literal_compositions
from aether_mcp.judge.mined_values import boundary_values, mine
from aether_mcp.judge.mutants import generate_mutants
from aether_mcp.nested_values import typed
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import subprocess_runner
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.spark_types import parse_type
from aether_mcp.wire import value_codec
from aether_mcp.workspace import ORIGINAL_MODULE, TESTS_DIR, Workspace, new_run_id

RUNNER_TIMEOUT_S = 300
PROBE_ROWS = 1500
MAX_SUGGESTIONS = 60
MAX_LISTED = 100  # uncovered items and survivors a result lists (fewer when long); the record holds them all
MAX_REASON = 1_000  # characters of a justification


class UncoveredItem(BaseModel):
    item: str = Field(description="id for justify: line:N or branch:A->B (B may be 'exit')")
    kind: Literal["line", "branch"]
    line: int
    source: str
    destination: str | None = Field(None, description="for a branch: the line it would go to, or 'exit'")
    destination_source: str | None = None
    justified: str | None = Field(None, description="the recorded reason, when justified")


class GateStatus(BaseModel):
    status: Literal["pass", "fail"]
    detail: str


class CoverageReport(BaseModel):
    workspace: str
    measured_on: str
    line_percent: float
    branch_percent: float
    statements: int
    branches: int
    uncovered: list[UncoveredItem] = Field(description="uncovered lines and branches, unjustified first, at most 100")
    uncovered_left_out: int = Field(0, description="uncovered items not listed here; record_path lists them all")
    record_path: str = Field("", description="the recorded result with every item (.aether/runs/spec.json, readable with read_file)")
    gate: GateStatus
    duration_s: float


class Survivor(BaseModel):
    mutant_id: str
    operator: str
    line: int
    description: str
    diff: str
    likely_equivalent: bool = Field(description="none of the probe rows told it apart from the original (see probe_rows); a row you think of may still kill it")
    justified: str | None = None


class MutationScore(BaseModel):
    workspace: str
    measured_on: str
    total: int
    killed: int
    invalid: int = Field(description="mutants that do not load; left out of the score")
    score: float
    survivors: list[Survivor] = Field(description="surviving mutants, unjustified first, at most 100")
    survivors_left_out: int = Field(0, description="survivors not listed here; record_path lists them all")
    record_path: str = Field("", description="the recorded result with every survivor (.aether/runs/spec.json, readable with read_file)")
    probe_rows: int = Field(0, description="generated rows each survivor was run on to judge likely_equivalent: boundaries, combinations of simple values and the UDF's constants, edges, random rows")
    gate: GateStatus
    duration_s: float


class Suggestion(BaseModel):
    args: list[Any] = Field(description="an input row in record_cases form (NaN/Infinity as strings, dates as ISO strings)")
    targets: list[str] = Field(description="what the row exercises: an uncovered line or branch, a surviving mutant, a boundary, a null")


class SuggestInputsResult(BaseModel):
    workspace: str
    suggestions: list[Suggestion]
    suggestions_left_out: int = Field(0, description="suggestions not shown because their rows are long; record the shown ones and call again")
    next_step: str = "pass the rows you want to record_cases(workspace, inputs): it records the original's real outputs"


class JustifyResult(BaseModel):
    item: str
    reason: str
    justified: dict[str, str] = Field(description="the recorded justifications (the first ones when many, each clipped; workspace_status counts them)")
    gates: dict[str, GateStatus] = Field(default_factory=dict, description="the coverage and mutation gates now, from the current results and every justification (freeze_tests reads the same)")


def coverage_report(root: SandboxRoot, workers: WorkerPool, workspace: str) -> CoverageReport:
    started = time.monotonic()
    opened = Workspace.open_intact(root, workspace)
    call_scope.report(0, 2, "delivering the cases to the original through Spark (the first call starts a Spark worker)")
    inputs = _captured_cases(opened, workers)
    call_scope.report(1, 2, f"running the original on {len(inputs)} cases under coverage.py")
    result = _run_spec(opened, {"mode": "coverage", "inputs": inputs})
    call_scope.report(2, 2, "done")
    lines = _source_lines(opened)
    justified = justifications(opened)
    uncovered = [
        UncoveredItem(item=f"line:{n}", kind="line", line=n, source=lines.get(n, ""), justified=justified.get(f"line:{n}"))
        for n in result["missing_lines"]
    ]
    for start, end in result["missing_branches"]:
        destination = "exit" if end < 0 else str(end)
        item = f"branch:{start}->{destination}"
        uncovered.append(
            UncoveredItem(
                item=item,
                kind="branch",
                line=start,
                source=lines.get(start, ""),
                destination=destination,
                destination_source=None if end < 0 else lines.get(end, ""),
                justified=justified.get(item),
            )
        )
    summary = result["summary"]
    statements, branches = summary["num_statements"], summary["num_branches"]
    covered_lines, covered_branches = summary["covered_lines"], summary["covered_branches"]
    gate = _coverage_gate(statements, branches, covered_lines, covered_branches, [u.model_dump() for u in uncovered], opened.config.tests.branch_coverage_gate)
    report = CoverageReport(
        workspace=str(opened.path),
        measured_on=f"{len(inputs)} cases of tests/cases.py, with their arguments as Spark delivers them"
        + (f"; module-level import-time code (lines {_ranges(result['import_time_lines'])}: import guards and other module-level control flow, run once at import) is not measured" if result.get("import_time_lines") else ""),
        line_percent=round(100.0 * covered_lines / statements, 2) if statements else 100.0,
        branch_percent=round(100.0 * covered_branches / branches, 2) if branches else 100.0,
        statements=statements,
        branches=branches,
        uncovered=uncovered,
        gate=gate,
        duration_s=round(time.monotonic() - started, 3),
    )
    _record(opened, "coverage", {**report.model_dump(), "covered_lines": covered_lines, "covered_branches": covered_branches})
    return _listed(report, "uncovered", opened)


def _coverage_gate(statements: int, branches: int, covered_lines: int, covered_branches: int, uncovered: list[dict[str, Any]], threshold: float) -> GateStatus:
    explained_lines = sum(1 for u in uncovered if u["kind"] == "line" and u.get("justified"))
    explained_branches = sum(1 for u in uncovered if u["kind"] == "branch" and u.get("justified"))
    line_ok = statements == 0 or (covered_lines + explained_lines) / statements >= threshold
    branch_ok = branches == 0 or (covered_branches + explained_branches) / branches >= threshold
    unexplained = [u["item"] for u in uncovered if not u.get("justified")]
    return GateStatus(
        status="pass" if line_ok and branch_ok else "fail",
        detail="every line and branch is covered or justified"
        if not unexplained
        else f"{len(unexplained)} uncovered and unexplained: {', '.join(unexplained[:8])}; call suggest_inputs, then record_cases, or justify",
    )


def _mutation_gate(score: float, survivors: list[dict[str, Any]], threshold: float) -> GateStatus:
    unexplained = [s["mutant_id"] for s in survivors if not s.get("justified")]
    return GateStatus(
        status="pass" if score >= threshold or not unexplained else "fail",
        detail=f"score {score:.2f} (gate {threshold:.2f})"
        + ("" if not unexplained else f"; {len(unexplained)} unexplained survivors: call suggest_inputs for rows that kill them, or justify the equivalent ones"),
    )


def _ranges(lines: list[int]) -> str:
    """1, 2, 3, 7 -> '1-3, 7'."""
    spans: list[list[int]] = []
    for line in lines:
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans)


@draws.recorded_call("mutation_score")
def mutation_score(root: SandboxRoot, workers: WorkerPool, workspace: str) -> MutationScore:
    started = time.monotonic()
    opened = Workspace.open_intact(root, workspace)
    call_scope.report(0, 3, "delivering the cases to the original through Spark (the first call starts a Spark worker)")
    inputs = _captured_cases(opened, workers)
    mutants = generate_mutants(opened.verified_original())
    call_scope.report(1, 3, f"running {len(inputs)} cases against each of {len(mutants)} mutants")
    result = _run_spec(opened, {"mode": "mutation", "inputs": inputs, "mutants": [{"id": m.mutant_id, "source": m.source} for m in mutants]})
    verdicts = {v["id"]: v for v in result["verdicts"]}
    by_id = {m.mutant_id: m for m in mutants}
    invalid = [m for m in mutants if verdicts[m.mutant_id]["killed"] is None]
    killed = [m for m in mutants if verdicts[m.mutant_id]["killed"]]
    surviving = [m for m in mutants if verdicts[m.mutant_id]["killed"] is False]
    probes = _probe_rows(opened)
    call_scope.report(2, 3, f"looking for rows that tell {len(surviving)} surviving mutants apart")
    differences = _run_spec(opened, {"mode": "distinguish", "probes": probes, "mutants": [{"id": m.mutant_id, "source": m.source} for m in surviving]})["first_difference"] if surviving else {}
    justified = justifications(opened)
    survivors = [
        Survivor(
            mutant_id=m.mutant_id,
            operator=m.operator,
            line=m.line,
            description=m.description,
            diff=m.diff,
            likely_equivalent=differences.get(m.mutant_id) is None,
            justified=justified.get(f"mutant:{m.mutant_id}"),
        )
        for m in surviving
    ]
    scored = len(mutants) - len(invalid)
    score = round(len(killed) / scored, 4) if scored else 1.0
    gate = _mutation_gate(score, [s.model_dump() for s in survivors], opened.config.tests.mutation_score_gate)
    report = MutationScore(
        workspace=str(opened.path),
        measured_on=f"{len(inputs)} cases of tests/cases.py, with their arguments as Spark delivers them",
        total=len(mutants),
        killed=len(killed),
        invalid=len(invalid),
        score=score,
        survivors=survivors,
        probe_rows=len(probes),
        gate=gate,
        duration_s=round(time.monotonic() - started, 3),
    )
    stored = report.model_dump()
    stored["distinguishing_rows"] = {mid: value_codec.encode(probes[index]) for mid, index in differences.items() if index is not None and mid in by_id}
    _record(opened, "mutation", stored)
    call_scope.report(3, 3, "done")
    return _listed(report, "survivors", opened)


R = TypeVar("R", CoverageReport, MutationScore)


def _listed(report: R, field: str, workspace: Workspace) -> R:
    """The result as returned: at most MAX_LISTED items of `field`, unjustified ones first, with the count left out
    and the path of the record that holds them all (the gates were judged on every item)."""
    items = sorted(getattr(report, field), key=lambda item: item.justified is not None)
    shown, left_out = paging.fit(items, MAX_LISTED, budget=paging.PAGE_BYTES)
    return report.model_copy(update={field: shown, f"{field}_left_out": left_out, "record_path": str(_record_path(workspace))})


@draws.recorded_call("suggest_inputs")
def suggest_inputs(root: SandboxRoot, workers: WorkerPool, workspace: str) -> SuggestInputsResult:
    opened = Workspace.open_intact(root, workspace)
    coverage = current_result(opened, "coverage") or coverage_report(root, workers, workspace).model_dump()
    mutation = current_result(opened, "mutation") or _current_after(opened, lambda: mutation_score(root, workers, workspace))
    suggestions: dict[str, Suggestion] = {}
    # one suggestion per row as the agent would pass it on, and none it has recorded already
    floats = [parse_type(a.type).simpleString() in ("float", "double") for a in opened.config.udf.args]

    def as_delivered(row: list[Any]) -> list[Any]:
        """An int in a float column is the float Spark delivers: 1 and 1.0 are one row."""
        return [float(v) if is_float and isinstance(v, int) and not isinstance(v, bool) else v for v, is_float in zip(row, floats)]

    recorded = {json.dumps(to_json_row(as_delivered(row)), sort_keys=True) for row in read_case_rows(opened.path / TESTS_DIR / "cases.py")}

    def add(row: list[Any], target: str) -> None:
        row = as_delivered(row)
        key = json.dumps(to_json_row(row), sort_keys=True)
        if key in recorded:
            return
        if key not in suggestions:
            suggestions[key] = Suggestion(args=to_json_row(row), targets=[])
        if target not in suggestions[key].targets:
            suggestions[key].targets.append(target)

    missing = [u for u in coverage["uncovered"] if not u.get("justified")]
    if missing:
        probes = _probe_rows(opened)
        traces = _run_spec(opened, {"mode": "trace", "probes": probes})["arcs"]
        for item in missing:
            for row, arcs in zip(probes, traces):
                if _covers(item, arcs):
                    add(row, f"uncovered {item['item']}: {item['source'].strip()}")
                    break
    for mutant_id, encoded in (mutation.get("distinguishing_rows") or {}).items():
        survivor = next((s for s in mutation["survivors"] if s["mutant_id"] == mutant_id), None)
        if survivor and not survivor.get("justified"):
            add(value_codec.decode(encoded), f"kills surviving mutant {mutant_id} (line {survivor['line']}: {survivor['description']})")
    for row, target in _boundary_rows(opened):
        if len(suggestions) >= MAX_SUGGESTIONS:
            break
        add(row, target)
    shown, _ = paging.list_page(list(suggestions.values())[:MAX_SUGGESTIONS], 0, MAX_SUGGESTIONS, budget=paging.PAGE_BYTES // 2)
    left_out = min(len(suggestions), MAX_SUGGESTIONS) - len(shown)
    return SuggestInputsResult(workspace=str(opened.path), suggestions=shown, suggestions_left_out=left_out)


def justify(root: SandboxRoot, workspace: str, item: str, reason: str) -> JustifyResult:
    opened = Workspace.open_intact(root, workspace)
    item, reason = (item or "").strip(), (reason or "").strip()
    if len(reason) < 15:
        raise ToolError("reason is too short; say why the item is acceptable (unreachable because ..., equivalent because ...), at least 15 characters.")
    if len(reason) > MAX_REASON:
        raise ToolError(f"reason is {len(reason):,} characters; say it in at most {MAX_REASON:,} (the report and every later result repeat it).")
    coverage, mutation = _current(opened, "coverage"), _current(opened, "mutation")
    open_items = [u["item"] for u in (coverage or {}).get("uncovered", [])] + [f"mutant:{s['mutant_id']}" for s in (mutation or {}).get("survivors", [])]
    if item not in open_items:
        stale = [tool for kind, tool in (("coverage", "coverage_report"), ("mutation", "mutation_score")) if _stored(opened, kind) is not None and _current(opened, kind) is None]
        missing = [tool for kind, tool in (("coverage", "coverage_report"), ("mutation", "mutation_score")) if _stored(opened, kind) is None]
        listing = ", ".join(open_items[:12]) or "none in current results"
        reruns = ""
        if stale:
            reruns += f" The {' and '.join(stale)} results are of an older original/udf.py or tests/cases.py: call {' and '.join(f'{t}(workspace)' for t in stale)} again, then justify what is still open."
        if missing:
            reruns += f" {' and '.join(missing)} never ran on this workspace: call {' and '.join(f'{t}(workspace)' for t in missing)} first."
        raise ToolError(f"{item!r} is not an uncovered line or branch or a surviving mutant in the current results; open items: {listing}.{reruns}")
    with opened.lock():
        recorded = justifications(opened)
        recorded[item] = reason
        _justifications_path(opened).write_text(json.dumps(recorded, indent=2, sort_keys=True), encoding="utf-8")
    for kind, data in (("coverage", coverage), ("mutation", mutation)):
        if data:
            for entry in data.get("uncovered", []) + data.get("survivors", []):
                if entry.get("item") == item or f"mutant:{entry.get('mutant_id')}" == item:
                    entry["justified"] = reason
            _record(opened, kind, data)
    gates = spec_gates(opened)
    return JustifyResult(item=item, reason=reason, justified=paging.fit_dict(recorded)[0], gates={kind: gate for kind, gate in gates.items() if gate is not None})


def justifications(workspace: Workspace) -> dict[str, str]:
    try:
        data = json.loads(_justifications_path(workspace).read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def current_result(workspace: Workspace, kind: str) -> dict[str, Any] | None:
    """The latest coverage or mutation result ("coverage", "mutation"), if the original and cases are unchanged since,
    with every justification recorded so far applied and its gate computed again."""
    data = _current(workspace, kind)
    if data is None:
        return None
    justified = justifications(workspace)
    tests = workspace.config.tests
    if kind == "coverage":
        for entry in data.get("uncovered", []):
            entry["justified"] = justified.get(entry["item"])
        uncovered = data.get("uncovered", [])
        statements, branches = data.get("statements", 0), data.get("branches", 0)
        covered_lines = data.get("covered_lines", statements - sum(1 for u in uncovered if u["kind"] == "line"))
        covered_branches = data.get("covered_branches", branches - sum(1 for u in uncovered if u["kind"] == "branch"))
        data["gate"] = _coverage_gate(statements, branches, covered_lines, covered_branches, uncovered, tests.branch_coverage_gate).model_dump()
    else:
        for entry in data.get("survivors", []):
            entry["justified"] = justified.get(f"mutant:{entry['mutant_id']}")
        data["gate"] = _mutation_gate(float(data.get("score", 0.0)), data.get("survivors", []), tests.mutation_score_gate).model_dump()
    return data


def spec_gates(workspace: Workspace) -> dict[str, GateStatus | None]:
    """The coverage and mutation gates from the latest current results and every justification since (None: not measured since the last change)."""
    gates: dict[str, GateStatus | None] = {}
    for kind in ("coverage", "mutation"):
        data = current_result(workspace, kind)
        gates[kind] = GateStatus.model_validate(data["gate"]) if data else None
    return gates


# --- helpers -----------------------------------------------------------------------------------


def _captured_cases(workspace: Workspace, workers: WorkerPool) -> list[Any]:
    rows = read_case_rows(workspace.path / TESTS_DIR / "cases.py")
    if not rows:
        raise ToolError("tests/cases.py has no cases yet; add some with record_cases(workspace, inputs) (suggest_inputs proposes rows).")
    try:
        return workers.capture(workspace, rows)
    except EvaluationFailed as exc:
        raise ToolError(f"the cases could not be delivered to the original through Spark ({exc}); run_tests(workspace, 'original') shows the problem in context.") from None


def _run_spec(workspace: Workspace, job: dict[str, Any]) -> dict[str, Any]:
    config = workspace.config.udf
    job = {
        **job,
        "module_path": str(workspace.original_module),
        "source": workspace.verified_original(),
        "function": config.function,
        "kind": config.kind,
        "pandas_form": config.pandas_form,
        "return_type": config.return_type,
        "use_arrow": config.use_arrow,
        "arg_types": [a.type for a in config.args],
    }
    run_dir = workspace.state_dir / "runs" / new_run_id(job["mode"])
    run_dir.mkdir(parents=True)
    job["work_dir"] = str(run_dir)
    (run_dir / "job.json").write_text(json.dumps(value_codec.encode(job)), encoding="utf-8")
    argv = [sys.executable, "-I", "-B", "-m", "aether_mcp.reference.spec_runner", str(run_dir / "job.json"), str(run_dir / "result.json")]
    env = {"TZ": workspace.config.spark.conf.get("spark.sql.session.timeZone", "UTC"), "PYTHONHASHSEED": "0"}
    outcome = subprocess_runner.run(argv, cwd=run_dir, log_path=run_dir / "runner.log", timeout_s=RUNNER_TIMEOUT_S, env_extra=env)
    result_path = run_dir / "result.json"
    if outcome.cancelled:
        raise ToolError(f"the {job['mode']} run of the original was cancelled and its process stopped; call the tool again to measure.")
    if outcome.timed_out or outcome.returncode != 0 or not result_path.exists():
        reason = f"timed out after {RUNNER_TIMEOUT_S}s" if outcome.timed_out else f"exited with code {outcome.returncode}"
        raise ToolError(f"the {job['mode']} run of the original {reason} (log: {outcome.log_path}); last output: {outcome.tail[-600:]!r}")
    return value_codec.decode(json.loads(result_path.read_text(encoding="utf-8")))


def _probe_rows(workspace: Workspace) -> list[list[Any]]:
    """Generated rows (boundaries, perturbed literals, nulls, edges, hidden-style), as a UDF would receive them."""
    config = workspace.config
    cases = read_case_rows(workspace.path / TESTS_DIR / "cases.py")
    rows = [row for row, _ in _boundary_rows(workspace)]
    rows += _composed_rows(workspace, cases)
    rows += _simple_rows(workspace, cases)
    rows += edge_rows(config, cases)
    rows += hidden_rows(config, mine(workspace.verified_original()), PROBE_ROWS, draws.seed("spec_strength.probe"))
    zone = zoneinfo.ZoneInfo(config.spark.conf.get("spark.sql.session.timeZone", "UTC"))
    types = [parse_type(a.type) for a in config.udf.args]
    # Structs marked as such, so the plain-Python runs hand the UDF the Rows Spark would.
    return [[typed(session_naive(value, zone), data_type) for value, data_type in zip(row, types)] for row in rows]


def _composed_rows(workspace: Workspace, cases: list[list[Any]]) -> list[list[Any]]:
    """Each string argument set to compositions of the original's literals, the others from a case."""
    types = [parse_type(a.type).simpleString() for a in workspace.config.udf.args]
    base = list(cases[0]) if cases and len(cases[0]) == len(types) else [_typical(t) for t in types]
    compositions = literal_compositions(mine(workspace.verified_original()))
    rows = []
    for position, ddl in enumerate(types):
        if ddl == "string":
            for text in compositions:
                row = list(base)
                row[position] = text
                rows.append(row)
    return rows


SIMPLE_VALUES: dict[str, list[Any]] = {
    "int": [0, 1, -1, 2, 10],
    "float": [0.0, 1.0, -1.0, 0.5, 2.0],
    "string": ["", "a", "A", " a ", "0"],
    "boolean": [True, False],
}
MAX_SIMPLE_ROWS = 1_000


def _simple_rows(workspace: Workspace, cases: list[list[Any]]) -> list[list[Any]]:
    """Combinations of simple values (0, 1, -1, '', 'a', the UDF's own constants, null) across the arguments.

    The rows a person tries first: a mutant one of them kills is not "likely equivalent". All
    combinations while there are at most MAX_SIMPLE_ROWS, else an evenly seeded sample of them.
    """
    import itertools
    import random

    mined = mine(workspace.verified_original())
    types = [parse_type(a.type).simpleString() for a in workspace.config.udf.args]
    base = list(cases[0]) if cases and len(cases[0]) == len(types) else [_typical(t) for t in types]
    choices = []
    for position, ddl in enumerate(types):
        family = "int" if ddl in ("tinyint", "smallint", "int", "bigint") else "float" if ddl in ("float", "double") else ddl
        values = list(SIMPLE_VALUES.get(family, []))
        if family == "int":
            limit = {"tinyint": 2**7, "smallint": 2**15, "int": 2**31}.get(ddl, 2**63)
            values += [int(n) for n in mined.compared_numbers if float(n).is_integer() and -limit <= n < limit][:6]
        elif family == "float":
            values += [float(n) for n in mined.compared_numbers][:6]
        elif family == "string":
            values += mined.strings[:6]
        values = list(dict.fromkeys([*values, None])) if values else [base[position], None]
        choices.append(values)
    total = 1
    for values in choices:
        total *= len(values)
    if total <= MAX_SIMPLE_ROWS:
        return [list(row) for row in itertools.product(*choices)]
    draw = random.Random(0)
    return [[draw.choice(values) for values in choices] for _ in range(MAX_SIMPLE_ROWS)]


def _boundary_rows(workspace: Workspace) -> list[tuple[list[Any], str]]:
    """Rows at every mined boundary, with perturbed literals, and with each argument null."""
    config = workspace.config
    types = [parse_type(a.type).simpleString() for a in config.udf.args]
    names = [a.name for a in config.udf.args]
    cases = read_case_rows(workspace.path / TESTS_DIR / "cases.py")
    base = list(cases[0]) if cases and len(cases[0]) == len(types) else [_typical(t) for t in types]
    mined = mine(workspace.verified_original())
    rows: list[tuple[list[Any], str]] = []
    for position, ddl in enumerate(types):
        if ddl in ("tinyint", "smallint", "int", "bigint", "float", "double"):
            for number in mined.compared_numbers:
                for value in boundary_values(number):
                    value = int(value) if ddl.endswith("int") and float(value).is_integer() else (float(value) if not ddl.endswith("int") else None)
                    if value is None:
                        continue
                    row = list(base)
                    row[position] = value
                    rows.append((row, f"boundary {number!r} of {names[position]}"))
        if ddl == "string":
            for literal in mined.strings[:12]:
                for variant in (literal, literal.upper(), f" {literal}", f"{literal}\t", f"\u00a0{literal}"):
                    row = list(base)
                    row[position] = variant
                    rows.append((row, f"literal {literal!r} of {names[position]}, perturbed"))
        row = list(base)
        row[position] = None
        rows.append((row, f"{names[position]} is null"))
    return rows


def _typical(ddl: str) -> Any:
    if ddl in ("double", "float"):
        return 1.0
    if ddl.endswith("int"):
        return 1
    if ddl == "string":
        return "a"
    if ddl == "boolean":
        return True
    return None


def _covers(item: dict[str, Any], arcs: list[list[int]]) -> bool:
    pairs = {tuple(arc) for arc in arcs}
    if item["kind"] == "line":
        return any(end == item["line"] for _, end in pairs)
    destination = item["destination"]
    return any(start == item["line"] and ((destination == "exit" and end < 0) or str(end) == destination) for start, end in pairs)


def _source_lines(workspace: Workspace) -> dict[int, str]:
    return {n: text for n, text in enumerate(workspace.verified_original().splitlines(), start=1)}


def _digests(workspace: Workspace) -> dict[str, str]:
    def digest(path: Path) -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""

    return {"original": digest(workspace.path / ORIGINAL_MODULE), "cases": digest(workspace.path / TESTS_DIR / "cases.py")}


def _record_path(workspace: Workspace) -> Path:
    return workspace.state_dir / "runs" / "spec.json"


def _record(workspace: Workspace, kind: str, data: dict[str, Any]) -> None:
    path = _record_path(workspace)
    with workspace.lock():
        try:
            stored = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        except ValueError:
            stored = {}
        stored[kind] = {"digests": _digests(workspace), "result": data}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(stored, indent=2, default=str), encoding="utf-8")


def _stored(workspace: Workspace, kind: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(_record_path(workspace).read_text(encoding="utf-8"))[kind]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry if isinstance(entry, dict) else None


def _current(workspace: Workspace, kind: str) -> dict[str, Any] | None:
    entry = _stored(workspace, kind)
    return entry["result"] if entry is not None and entry.get("digests") == _digests(workspace) else None


def _current_after(workspace: Workspace, measure) -> dict[str, Any]:
    measure()
    return _current(workspace, "mutation") or {}


def _justifications_path(workspace: Workspace) -> Path:
    return workspace.state_dir / "justifications.json"

