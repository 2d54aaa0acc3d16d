"""try_optimization: one verified optimize step; only a clean, equal and measurably faster change is kept.

The first call for a candidate records it (after a PASS audit) as the best so far. Each later
call snapshots the files, audits the candidate (static rules, watched runs and a fresh
comparison on new hidden rows), then times it against the best in one interleaved Spark
application. It is accepted only when the audit passes and the whole 95% interval of the paired
speedup lies above 1 + min_gain; otherwise the candidate/ files are restored byte for byte to
the best. The attempt itself stays in its snapshot, so nothing written is lost. Every call is
appended to .aether/journal.jsonl.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import bench_data, draws
from aether_mcp.evaluation.spark_session import compiler_note
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.tools.benchmarking import (
    DEFAULT_PRECISION,
    DEFAULT_ROWS,
    _benchmarkable,
    _checked,
    _ended_text,
    _output_mismatch,
    _run_application,
    bootstrap_paired_ci,
    paired_speedup,
    precision_request,
)
from aether_mcp.tools.cheat_audit import MAX_HIDDEN_ROWS, MIN_HIDDEN_ROWS, AuditCandidateResult, audit_candidate
from aether_mcp.workspace import CANDIDATE_DIR, Workspace, candidate_results, snapshot_store
from aether_mcp.workspace.frozen_tests import freeze_record

JOURNAL = "journal.jsonl"
OPTIMIZE_DIR = "optimize"
MAX_STEPS = 10
MAX_REJECTIONS_IN_A_ROW = 3
Progress = Callable[[int, int | None, str], None]


class TryOptimizationResult(BaseModel):
    workspace: str
    candidate: str
    step: int = Field(description="0 for the call that records the starting point, then 1, 2, ...")
    label: str
    accepted: bool
    reverted: bool = Field(description="the candidate/ files were restored to the best version")
    reason: str
    speedup: float | None = Field(description="median over rounds of best seconds / candidate seconds in the same round")
    speedup_ci: list[float] | None = Field(description="95% bootstrap interval of that speedup; accepted only when its low end is above 1 + min_gain")
    min_gain: float
    audit_verdict: str
    audit_reasons: list[str]
    snapshot_id: int = Field(description="the files as this call found them (the attempt, kept even when reverted)")
    best_snapshot_id: int = Field(description="the best version after this call")
    restored: list[str] = Field(description="files written back from the best version")
    deleted: list[str] = Field(description="candidate files the attempt added, removed")
    steps_taken: int
    rejections_in_a_row: int
    advice: str = Field(description="continue, or stop and why")
    benchmark: str | None = Field(description="the interleaved run's JSON (every round's seconds), when one ran")
    journal: str
    duration_s: float


@draws.recorded_call("try_optimization")
def try_optimization(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    candidate: str,
    label: str,
    min_gain: float = 0.03,
    rows: int = DEFAULT_ROWS,
    repeats: int = 7,
    spec: dict[str, Any] | None = None,
    hidden_rows: int = 20_000,
    timeout_s: float = 3_600,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
) -> TryOptimizationResult:
    started = time.monotonic()
    opened, name, _kind, resolved = _benchmarkable(root, workspace, candidate)
    label = (label or "").strip()
    if not label or len(label) > snapshot_store.MAX_LABEL:
        raise ToolError(f"label must say what this attempt changes, 1..{snapshot_store.MAX_LABEL} characters (e.g. 'tier lookup as one map').")
    if not isinstance(min_gain, (int, float)) or not 0.0 <= min_gain <= 1.0:
        raise ToolError("min_gain must be between 0 and 1 (0.03: the whole confidence interval at least 3% faster than the best).")
    _checked(None, rows, repeats, 1, timeout_s)
    if not MIN_HIDDEN_ROWS <= hidden_rows <= MAX_HIDDEN_ROWS:
        raise ToolError(f"hidden_rows must be between {MIN_HIDDEN_ROWS} and {MAX_HIDDEN_ROWS}: every step's audit needs a fresh comparison on hidden rows (default 20000).")
    if freeze_record(opened) is None:
        raise ToolError("the tests are not frozen: optimize only against a fixed specification. Call freeze_tests(workspace) once the phase-1 gates hold, then try_optimization.")
    report = progress or (lambda done, total, message: None)
    state = _load_state(opened, name)
    if state is not None:
        step = state["steps"] + 1
    else:
        step = 0
    with opened.lock():
        attempt = snapshot_store.take(opened, f"try_optimization {name} step {step}: {label}")

    if state is None:
        return _start(root, workers, opened, name, label, min_gain, attempt, hidden_rows, cancel, report, started)

    best = snapshot_store.load(opened, state["best_snapshot"])
    owned = _owned_files(opened, name, best, attempt)
    if {rel: best.files.get(rel) for rel in owned} == {rel: attempt.files.get(rel) for rel in owned}:
        return _finish(opened, name, step - 1, label, state, attempt, accepted=False, reverted=False, reason="the candidate files are unchanged since the best version: nothing to try (not counted as a step)", min_gain=min_gain, started=started, count=False)

    report(0, 3, "audit_candidate with a fresh comparison on hidden rows")
    audit = audit_candidate(root, workers, str(opened.path), name, hidden_rows, cancel=cancel)
    speedup = interval = benchmark = None
    if audit.verdict == "FAIL":
        accepted, reason = False, f"audit_candidate FAIL: {'; '.join(audit.reasons[:3])}"
    else:
        report(1, 3, f"timing against the best (snapshot {best.snapshot_id}) in one interleaved run")
        folder = _materialize(opened, name, best)
        data = bench_data.generate(opened, rows, None, spec, lambda done, total, message: report(1, 3, message))
        try:
            run_folder, raw = _run_application(
                opened, f"candidate:{name}", data.path,
                {"modes": ["best", "candidate"], "repeats": repeats, "warmup": 1, "precision": precision_request(("best", "candidate"), DEFAULT_PRECISION, None, threshold=1 + min_gain)},
                None, timeout_s, cancel, report, resolved, best=folder,
            )
        except ToolError as exc:
            if cancel is not None and cancel.is_set():
                raise  # a cancelled step leaves the files as they are
            run_folder, raw = None, {"failed": {"run": str(exc)}, "runs": {}}
        if run_folder is not None:
            benchmark = str(run_folder / "optimization.json")
            Path(benchmark).write_text(json.dumps({"label": label, "best_snapshot": best.snapshot_id, "attempt_snapshot": attempt.snapshot_id, **raw}, indent=2), encoding="utf-8")
        if raw["failed"] or not raw["runs"].get("best") or not raw["runs"].get("candidate"):
            accepted, reason = False, f"the timed run failed: {json.dumps(raw['failed'])[:500]}"
        elif _output_mismatch(raw):
            accepted, reason = False, f"wrong at benchmark scale: {_output_mismatch(raw)}"
        else:
            speedup = paired_speedup(raw["runs"]["best"], raw["runs"]["candidate"])
            interval = bootstrap_paired_ci(raw["runs"]["best"], raw["runs"]["candidate"])
            accepted, reason = decide(speedup, interval, min_gain)
            reason += f"; {len(raw['runs']['candidate'])} timed rounds ({_ended_text(raw)}){compiler_note(raw.get('environment'))}"
    report(2, 3, "accepted" if accepted else "rejected: restoring the best version")
    return _finish(
        opened, name, step, label, state, attempt, accepted=accepted, reverted=not accepted, reason=reason, min_gain=min_gain, started=started,
        speedup=speedup, interval=interval, audit_verdict=audit.verdict, audit_reasons=audit.reasons, benchmark=benchmark, best=best,
    )


def decide(speedup: float, interval: tuple[float, float], min_gain: float) -> tuple[bool, str]:
    """Whether a clean, equal attempt is kept: only when its whole 95% interval clears 1 + min_gain; and why."""
    low, high = interval
    if low > 1.0 + min_gain:
        return True, f"clean and equal, and faster than the best: {speedup:.3f}x (95% CI {low:.3f}-{high:.3f}) clears 1 + min_gain = {1 + min_gain:.3f}"
    return False, f"clean and equal, but not a verified win: {speedup:.3f}x (95% CI {low:.3f}-{high:.3f}) does not clear 1 + min_gain = {1 + min_gain:.3f} over the whole interval"


def journal_entries(workspace: Workspace) -> list[dict[str, Any]]:
    """Every try_optimization call recorded in the workspace, oldest first (unreadable lines skipped)."""
    try:
        lines = (workspace.state_dir / JOURNAL).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return entries


def best_versions(workspace: Workspace) -> dict[str, dict[str, Any]]:
    """Per candidate: the optimization state (best snapshot, steps, rejections in a row)."""
    folder = workspace.state_dir / OPTIMIZE_DIR
    found = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            found[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return found


def _start(root, workers, opened: Workspace, name: str, label: str, min_gain: float, attempt, hidden_rows: int, cancel, report: Progress, started: float) -> TryOptimizationResult:
    """The first call: the candidate as it is becomes the best, if it passes the audit."""
    audit = _current_pass(opened, name)
    if audit is None:
        report(0, 1, "audit_candidate of the starting point")
        audit = audit_candidate(root, workers, str(opened.path), name, hidden_rows, cancel=cancel)
    else:
        report(1, 1, f"reusing the PASS of {audit.result_path}: these bytes, audited against the tests as frozen now")
    if audit.verdict == "FAIL":
        _append_journal(opened, {"candidate": name, "step": 0, "label": label, "accepted": False, "reverted": False, "reason": "starting point failed audit_candidate", "audit_reasons": audit.reasons, "snapshot_id": attempt.snapshot_id})
        raise ToolError(
            f"candidate {name!r} cannot be the starting point: audit_candidate FAIL ({'; '.join(audit.reasons[:3])}). "
            "Fix it (audit_candidate lists the findings), then call try_optimization again to record it as the best."
        )
    state = {"best_snapshot": attempt.snapshot_id, "best_label": label, "steps": 0, "rejections_in_a_row": 0, "started": _now()}
    return _finish(
        opened, name, 0, label, state, attempt, accepted=True, reverted=False, min_gain=min_gain, started=started, audit_verdict=audit.verdict, audit_reasons=[],
        reason="recorded as the best version (audit_candidate PASS with a fresh comparison); each later call must beat it", count=False,
    )


def _finish(
    opened: Workspace, name: str, step: int, label: str, state: dict[str, Any], attempt, *, accepted: bool, reverted: bool, reason: str, min_gain: float, started: float,
    speedup: float | None = None, interval: list[float] | None = None, audit_verdict: str = "not run", audit_reasons: list[str] | None = None,
    benchmark: str | None = None, best=None, count: bool = True,
) -> TryOptimizationResult:
    restored: list[str] = []
    deleted: list[str] = []
    if reverted and best is not None:
        with opened.lock():
            owned = _owned_files(opened, name, best, attempt)
            restored, deleted = snapshot_store.restore(opened, best, only=owned.__contains__)
    if count:
        state = {**state, "steps": step, "rejections_in_a_row": 0 if accepted else state["rejections_in_a_row"] + 1}
        if accepted:
            state = {**state, "best_snapshot": attempt.snapshot_id, "best_label": label}
    _save_state(opened, name, state)
    advice = _advice(state)
    entry = {
        "candidate": name, "step": step, "label": label, "accepted": accepted, "reverted": reverted, "reason": reason,
        "speedup": speedup, "speedup_ci": interval, "min_gain": min_gain, "audit_verdict": audit_verdict, "audit_reasons": audit_reasons or [],
        "snapshot_id": attempt.snapshot_id, "best_snapshot_id": state["best_snapshot"], "benchmark": benchmark,
        "candidate_digest": _digest(opened, name),
    }
    _append_journal(opened, entry)
    return TryOptimizationResult(
        workspace=str(opened.path),
        candidate=name,
        step=step,
        label=label,
        accepted=accepted,
        reverted=reverted,
        reason=reason,
        speedup=speedup,
        speedup_ci=interval,
        min_gain=min_gain,
        audit_verdict=audit_verdict,
        audit_reasons=audit_reasons or [],
        snapshot_id=attempt.snapshot_id,
        best_snapshot_id=state["best_snapshot"],
        restored=restored,
        deleted=deleted,
        steps_taken=state["steps"],
        rejections_in_a_row=state["rejections_in_a_row"],
        advice=advice,
        benchmark=benchmark,
        journal=str(opened.state_dir / JOURNAL),
        duration_s=round(time.monotonic() - started, 3),
    )


def _current_pass(opened: Workspace, name: str) -> AuditCandidateResult | None:
    """The latest PASS of exactly these candidate bytes (original and deviations as now), audited against the tests as frozen now."""
    try:
        frozen = dt.datetime.fromisoformat((freeze_record(opened) or {})["time"])
    except (KeyError, TypeError, ValueError):
        return None
    for entry in reversed(candidate_results.current_results(opened, "audits", name)):
        try:
            audit = AuditCandidateResult.model_validate_json(Path(entry["result_path"]).read_text(encoding="utf-8"))
            # run folders are named by their UTC start time; an audit from before the current freeze judged other tests
            audited = dt.datetime.strptime(Path(audit.result_path).parent.name[:15], "%Y%m%dT%H%M%S").replace(tzinfo=dt.UTC)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if audit.verdict.startswith("PASS") and audit.tests == "frozen as recorded" and audited > frozen:
            return audit
    return None


def _advice(state: dict[str, Any]) -> str:
    if state["steps"] >= MAX_STEPS:
        return f"stop: {state['steps']} steps taken (the budget is {MAX_STEPS}); ship the best version (report shows it and how to wire it)."
    if state["rejections_in_a_row"] >= MAX_REJECTIONS_IN_A_ROW:
        return f"stop: {state['rejections_in_a_row']} rejections in a row; the easy wins are taken. Ship the best version (report)."
    return f"continue if there is a next idea: nsys_profile shows where the time goes; {MAX_STEPS - state['steps']} steps left, stop after {MAX_REJECTIONS_IN_A_ROW} rejections in a row."


def _owned_files(opened: Workspace, name: str, *versions) -> set[str]:
    """candidate/<name>.py and the candidate/ modules it imports in any of `versions`: what a revert restores.

    Other candidates and the tests are left as they are.
    """
    entry = f"{CANDIDATE_DIR}/{name}.py"
    owned = {entry}
    for version in versions:
        digest = version.files.get(entry)
        if digest is None:
            continue
        try:
            tree = ast.parse(snapshot_store.read_blob(opened, digest).decode("utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        modules |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        for rel in version.files:
            parts = rel.split("/")
            if len(parts) >= 2 and parts[0] == CANDIDATE_DIR and (parts[1].removesuffix(".py") in modules):
                owned.add(rel)
    return owned


def _candidate_files(files: dict[str, str]) -> dict[str, str]:
    return {rel: digest for rel, digest in files.items() if rel.startswith(f"{CANDIDATE_DIR}/")}


def _materialize(opened: Workspace, name: str, best) -> Path:
    """The best version's candidate/ files in a folder of their own, for the benchmark's `best` mode."""
    folder = opened.state_dir / OPTIMIZE_DIR / name / f"best-{best.snapshot_id}"
    for rel, digest in _candidate_files(best.files).items():
        target = folder / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(snapshot_store.read_blob(opened, digest))
    if not (folder / CANDIDATE_DIR / f"{name}.py").is_file():
        raise ToolError(f"the best version (snapshot {best.snapshot_id}) has no candidate/{name}.py; the optimization state is damaged. Start again under a new candidate name.")
    return folder


def _state_path(opened: Workspace, name: str) -> Path:
    return opened.state_dir / OPTIMIZE_DIR / f"{name}.json"


def _load_state(opened: Workspace, name: str) -> dict[str, Any] | None:
    try:
        state = json.loads(_state_path(opened, name).read_text(encoding="utf-8"))
        return state if isinstance(state, dict) and isinstance(state.get("best_snapshot"), int) else None
    except (OSError, ValueError):
        return None


def _save_state(opened: Workspace, name: str, state: dict[str, Any]) -> None:
    path = _state_path(opened, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")


def _append_journal(opened: Workspace, entry: dict[str, Any]) -> None:
    with opened.lock(), open(opened.state_dir / JOURNAL, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"time": _now(), **entry}) + "\n")


def _digest(opened: Workspace, name: str) -> str | None:
    path = opened.path / CANDIDATE_DIR / f"{name}.py"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
