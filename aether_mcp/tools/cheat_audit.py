"""audit_candidate: a deterministic judge of a candidate: static rules, watched runs and a fresh comparison.

PASS needs no blocking finding, `byte_compare` equal on fresh hidden inputs in the same call,
and an intact workspace whose tests, if frozen, are as recorded. Every rule is code
(aether_mcp.judge.cheat_rules for the static ones, the candidate worker's watch for the dynamic ones).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from typing import Any, Callable, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import deviations
from aether_mcp.judge import cheat_rules
from aether_mcp.candidates import BadCandidate, candidate_path, check_target, declared_target
from aether_mcp.judge.case_literals import NotALiteral, literal
from aether_mcp.judge.compare import classify
from aether_mcp.judge.hidden_inputs import hidden_rows
from aether_mcp.judge.mined_values import mine
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.test_freeze import freeze_record, require_frozen_tests_intact
from aether_mcp.tools import device_proof
from aether_mcp.tools.byte_compare import ByteCompareResult, byte_compare
from aether_mcp.tools.device_proof import DeviceActivity
from aether_mcp.workspace import CANDIDATE_DIR, TESTS_DIR, Workspace, new_run_id

SMALL_ROWS = 1_000
LARGE_ROWS = 20_000
MIN_HIDDEN_ROWS = 1_000
MAX_HIDDEN_ROWS = 200_000
Progress = Callable[[int, int | None, str], None]


class AuditFinding(BaseModel):
    rule: str
    severity: Literal["block", "warn"]
    check: Literal["static", "dynamic"]
    file: str
    line: int | None
    evidence: str
    why: str
    fix: str


class ComparisonSummary(BaseModel):
    equal: bool
    rows_compared: int
    mismatched: dict[str, int]
    error: str | None
    contract_problems: list[str]
    declared_deviations: list[str]
    result_path: str


class AuditCandidateResult(BaseModel):
    workspace: str
    candidate: str
    verdict: Literal["PASS", "FAIL"]
    reasons: list[str] = Field(description="why the verdict is FAIL (empty on PASS)")
    findings: list[AuditFinding]
    comparison: ComparisonSummary
    tests: str = Field(description="frozen as recorded, or not frozen")
    backend: Literal["cpu", "gpu"] = Field(description="where the candidate ran (as in byte_compare)")
    simulated: bool = Field(description="a kernel candidate ran under numba's CUDA simulator")
    gpu_verified: bool = Field(description="device counters showed the work on the GPU; false on the CPU backend")
    backend_note: str
    device_activity: DeviceActivity | None = Field(None, description="GPU backend: what the device did; its problems are blocking findings")
    duration_s: float
    result_path: str


def audit_candidate(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    candidate: str,
    hidden_rows_count: int = 20_000,
    watched_rows: tuple[int, int] = (SMALL_ROWS, LARGE_ROWS),
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    backend: str | None = None,
) -> AuditCandidateResult:
    started = time.monotonic()
    opened = Workspace.open_intact(root, workspace)
    target = check_target(opened, candidate if candidate.startswith("candidate:") else f"candidate:{candidate}")
    name = target.removeprefix("candidate:")
    require_frozen_tests_intact(opened, "audit_candidate")
    resolved = device_proof.choose(opened, target, backend)
    deviations.load(opened, name)  # an unreadable deviation file is refused before anything runs
    report = progress or (lambda done, total, message: None)
    if not MIN_HIDDEN_ROWS <= hidden_rows_count <= MAX_HIDDEN_ROWS:
        raise ToolError(f"hidden_rows must be between {MIN_HIDDEN_ROWS} and {MAX_HIDDEN_ROWS}: a PASS needs a fresh comparison on hidden rows (default 20000).")
    small_rows, large_rows = watched_rows
    if not 1 <= small_rows or large_rows < 4 * small_rows:
        raise ToolError(f"watched_rows must be positive and grow at least fourfold (got {small_rows} and {large_rows}), so per-row work shows as growth.")

    report(0, 3, "static rules")
    findings = _static_findings(opened, name)
    report(1, 3, "fresh comparison on hidden inputs")
    # the comparison also records device activity on the GPU backend (device_proof)
    comparison = byte_compare(root, workers, workspace, name, hidden_rows=hidden_rows_count, cancel=cancel, backend=resolved.name)
    report(2, 3, "watched runs")
    dynamic, watch_problem = _dynamic_findings(opened, workers, target, watched_rows, cancel, resolved.name)
    findings += dynamic
    file = f"{CANDIDATE_DIR}/{name}.py"
    if comparison.device_activity is not None:
        findings += [_dynamic(problem.rule, file, f"device counters: {problem.message}") for problem in comparison.device_activity.problems]

    blocking = [f for f in findings if f.severity == "block"]
    reasons = [f"{f.rule} ({f.check}, {f.file}:{f.line}): {f.evidence}" for f in blocking]
    if watch_problem:
        reasons.append(watch_problem)
    if comparison.error:
        reasons.append(f"the candidate could not be compared: {comparison.error}")
    elif not comparison.equal:
        mismatched = sum(s.mismatched for s in comparison.sources)
        reasons.append(f"byte_compare found {mismatched} mismatching rows" + (f" and {'; '.join(comparison.contract_problems)}" if comparison.contract_problems else ""))
    run_id = new_run_id()
    result_path = opened.state_dir / "runs" / run_id / "audit_candidate.json"
    result = AuditCandidateResult(
        workspace=str(opened.path),
        candidate=name,
        verdict="PASS" if not reasons else "FAIL",
        reasons=reasons,
        findings=findings,
        comparison=_summary(comparison),
        tests="frozen as recorded" if freeze_record(opened) else "not frozen",
        backend=comparison.backend,
        simulated=comparison.simulated,
        gpu_verified=comparison.gpu_verified,
        backend_note=comparison.backend_note,
        device_activity=comparison.device_activity,
        duration_s=round(time.monotonic() - started, 3),
        result_path=str(result_path),
    )
    result_path.parent.mkdir(parents=True, exist_ok=True)
    result_path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
    _record_latest(opened, result)
    report(3, 3, result.verdict)
    return result


def _record_latest(workspace: Workspace, result: AuditCandidateResult) -> None:
    """The latest verdict per candidate, for workspace_status (stale once the candidate file changes)."""
    path = workspace.state_dir / "runs" / "audits.json"
    with workspace.lock():
        try:
            latest = json.loads(path.read_text()) if path.exists() else {}
        except ValueError:
            latest = {}
        candidate_file = candidate_path(workspace, f"candidate:{result.candidate}")
        latest[result.candidate] = {
            "verdict": result.verdict,
            "blocking": sum(1 for f in result.findings if f.severity == "block"),
            "candidate_digest": hashlib.sha256(candidate_file.read_bytes()).hexdigest() if candidate_file.exists() else None,
            "result_path": result.result_path,
        }
        path.write_text(json.dumps(latest, indent=2, sort_keys=True))


def _static_findings(workspace: Workspace, name: str) -> list[AuditFinding]:
    path = candidate_path(workspace, f"candidate:{name}")
    source = path.read_text(encoding="utf-8")
    try:
        kind = declared_target(source, name)
    except BadCandidate as exc:
        raise ToolError(f"{exc}; fix the candidate (run_tests shows the same problem) and audit again.") from None
    case_values = _case_literals(workspace)
    original_values = cheat_rules.source_literals(workspace.original_module.read_text(encoding="utf-8"))
    entry_point = "build" if kind == "sql" else "evaluate"
    found: list[cheat_rules.RuleFinding] = []
    files = [path] + [p for p in cheat_rules.imported_workspace_modules(source, workspace.path / CANDIDATE_DIR, workspace.path) if p != path]
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
            found += cheat_rules.check_candidate(text, file.relative_to(workspace.path).as_posix(), kind, case_values, original_values, entry_point)
        except (SyntaxError, UnicodeDecodeError) as exc:
            raise ToolError(f"{file.relative_to(workspace.path)} cannot be parsed ({exc}); fix it and audit again.") from None
    return [AuditFinding(check="static", **f.__dict__) for f in found]


def _dynamic_findings(
    workspace: Workspace, workers: WorkerPool, target: str, watched_rows: tuple[int, int], cancel: threading.Event | None, backend: str = "cpu"
) -> tuple[list[AuditFinding], str | None]:
    """Findings of the watched runs, and why the watched runs could not finish (a FAIL reason), if they could not."""
    small_rows, large_rows = watched_rows
    mined = mine(workspace.original_module.read_text(encoding="utf-8"))
    small = hidden_rows(workspace.config, mined, small_rows, secrets.randbits(64))
    large = hidden_rows(workspace.config, mined, large_rows, secrets.randbits(64))
    file = f"{CANDIDATE_DIR}/{target.removeprefix('candidate:')}.py"
    try:
        watched = workers.audit(workspace, target, small, large, cancel=cancel, backend=backend)
    except EvaluationFailed as exc:
        if exc.kind == "cancelled":
            raise ToolError("audit_candidate was cancelled; nothing is left running.") from None
        if "TripwireTriggered" in str(exc) or "tripwire" in str(exc):
            return [_dynamic("reaches_original", file, f"the candidate used the original while loading: {exc}")], None
        return [], f"the watched runs could not finish ({exc}); a candidate must run under watch as it runs in byte_compare"
    findings = []
    for event in watched.get("events", []):
        if event.startswith("tripwire") or "original" in event:
            findings.append(_dynamic("reaches_original", file, event))
        elif event.startswith("opened"):
            findings.append(_dynamic("reads_forbidden", file, event))
        else:
            findings.append(_dynamic("escape", file, event))
    for node in watched.get("plan_python_nodes", []):
        findings.append(_dynamic("row_at_a_time", file, f"the executed plan evaluates Python ({node})"))
    if watched.get("conf_changes"):
        findings.append(_dynamic("tampering", file, f"the build changed Spark confs ({', '.join(watched['conf_changes'])}); they were restored"))
    for call in watched.get("plan_jvm_calls", []):
        findings.append(_dynamic("escape", file, f"the executed plan calls into the JVM or reads files ({call})"))
    if watched["kind"] != "sql":
        small_calls, large_calls = watched["calls_small"], watched["calls_large"]
        rows_small, rows_large = watched["rows_small"], watched["rows_large"]
        # Calls that do not grow with the rows are per-batch helpers; per-row work grows with them.
        if rows_small and rows_large >= 4 * rows_small and large_calls > 2 * small_calls + 10:
            findings.append(
                _dynamic(
                    "row_at_a_time",
                    file,
                    f"{small_calls} Python steps (calls and lines) in the candidate's code for {rows_small} rows, {large_calls} for {rows_large}: the work grows with the rows",
                )
            )
        if watched["inputs_changed"]:
            findings.append(_dynamic("tampering", file, "the candidate changed its input columns in place"))
        for one, tiny in zip(watched["outputs_one_batch"], watched["outputs_tiny_batches"]):
            difference = classify(one, tiny)
            if difference is not None:
                findings.append(_dynamic("batch_dependent", file, f"one batch vs one-row batches: {difference.detail}"))
                break
    if watched["kind"] != "sql" and (watched.get("threads_left") or watched.get("children_left")):
        findings.append(_dynamic("escape", file, f"left {watched.get('threads_left', 0)} threads and {watched.get('children_left', 0)} child processes running"))
    return findings, None


def _dynamic(rule: str, file: str, evidence: str, severity: str = "block") -> AuditFinding:
    return AuditFinding(rule=rule, severity=severity, check="dynamic", file=file, line=None, evidence=evidence, why=cheat_rules.WHY[rule], fix=cheat_rules.FIX[rule])  # type: ignore[arg-type]


def _case_literals(workspace: Workspace) -> set[Any]:
    import ast

    path = workspace.path / TESTS_DIR / "cases.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    values: set[Any] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CASES" for t in statement.targets):
            try:
                cases = literal(statement.value)
            except NotALiteral:
                return set()
            for case in cases if isinstance(cases, list) else []:
                if isinstance(case, dict):
                    values |= cheat_rules.literals_in(case.get("args")) | cheat_rules.literals_in(case.get("expected"))
    return values


def _summary(result: ByteCompareResult) -> ComparisonSummary:
    return ComparisonSummary(
        equal=result.equal,
        rows_compared=result.rows_compared,
        mismatched={s.source: s.mismatched for s in result.sources},
        error=result.error,
        contract_problems=result.contract_problems,
        declared_deviations=result.policy.declared_deviations,
        result_path=result.result_path,
    )
