"""audit_candidate: a deterministic judge of a candidate: static rules, watched runs and a fresh comparison.

PASS needs no blocking finding, `byte_compare` equal on fresh hidden inputs in the same call,
and an intact workspace whose tests, if frozen, are as recorded. Every rule is code
(aether_mcp.judge.cheat_rules for the static ones; for the dynamic ones, the watch in the
confined candidate processes, whose events are findings whether they came from the comparison
or the watched runs). The watched runs' outputs are compared with the original like any other
rows, at one batch per run, at the job's own Arrow batch size and above it, and one row per
batch. Where the candidate's processes could not be confined, a clean verdict reads
"PASS (unconfined)".
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import draws
from aether_mcp.backend import Resolved
from aether_mcp.confined.classic_build import STARTED
from aether_mcp.judge import cheat_rules, layouts, sql_functions
from aether_mcp.judge.case_literals import NotALiteral, literal, source_literals
from aether_mcp.judge.compare import RAISE_KIND, classify
from aether_mcp.judge.hidden_inputs import hidden_rows
from aether_mcp.judge.mined_values import mine
from aether_mcp.judge.watch_events import WatchEvent, parse, rule_of
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import confined_child, confinement
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.spark_types import field_names, parse_type
from aether_mcp.tools import device_proof
from aether_mcp.tools.byte_compare import ByteCompareResult, Comparison, byte_compare
from aether_mcp.tools.device_proof import DeviceActivity
from aether_mcp.wire.value_codec import Raised
from aether_mcp.workspace import CANDIDATE_DIR, TESTS_DIR, Workspace, candidate_results, deviations, job_constants, new_run_id
from aether_mcp.workspace.candidates import BadCandidate, candidate_path, check_target, declared_target
from aether_mcp.workspace.frozen_tests import freeze_record, require_frozen_tests_intact

SMALL_ROWS = 1_000
LARGE_ROWS = 20_000
TINY_BATCH_ROWS = 200  # rows run again one per batch, to catch results that depend on the batch
MIN_HIDDEN_ROWS = 1_000
MAX_HIDDEN_ROWS = 200_000
MAX_LISTED_FINDINGS = 50  # in a result; its record on disk keeps every one
AS_IN_JOB_TIMEOUT_S = 180  # a sql candidate built as its job builds it: a SparkSession of its own starts first
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
    equal: bool | None = Field(description="null: no verdict, too few rows on which the original returned (see evidence)")
    rows_compared: int
    evidence: str = ""
    original_raised: int = Field(0, description="rows the original raised on; the candidate must fail there too")
    mismatched: dict[str, int]
    error: str | None
    contract_problems: list[str]
    declared_deviations: list[str]
    result_path: str


class AuditCandidateResult(BaseModel):
    workspace: str
    candidate: str
    verdict: Literal["PASS", "PASS (unconfined)", "FAIL"] = Field(description="PASS (unconfined): clean, but the candidate's processes could not be confined here (see confinement)")
    reasons: list[str] = Field(description="why the verdict is FAIL (empty on PASS)")
    findings: list[AuditFinding] = Field(description="blocking findings first, at most 50")
    findings_left_out: int = Field(0, description="findings not listed here; the record at result_path has them all")
    comparison: ComparisonSummary
    tests: str = Field(description="frozen as recorded, or not frozen")
    backend: Literal["cpu", "gpu"] = Field(description="where the candidate ran (as in byte_compare)")
    simulated: bool = Field(description="a kernel candidate ran under numba's CUDA simulator")
    gpu_verified: bool = Field(description="device counters showed the work on the GPU; false on the CPU backend")
    backend_note: str
    device_activity: DeviceActivity | None = Field(None, description="GPU backend: what the device did; its problems are blocking findings")
    confined: bool = Field(description="every process that ran the candidate was confined")
    confinement: str = Field(description="how, or why not")
    watched_rows_compared: int = Field(0, description="rows of the watched runs compared with the original")
    duration_s: float
    result_path: str


@draws.recorded_call("audit_candidate")
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
    findings = _static_findings(opened, name) + _job_load_findings(opened, name, resolved)
    # a sql candidate is built once more as its job builds it, beside the comparison and the watched runs
    as_in_job = _AsInTheJob(opened, name, resolved, cancel) if _kind(opened, name) == "sql" else None
    report(1, 3, "fresh comparison on hidden inputs")
    # the comparison also records device activity on the GPU backend (device_proof)
    comparison = byte_compare(root, workers, workspace, name, hidden_rows=hidden_rows_count, cancel=cancel, backend=resolved.name)
    report(2, 3, "watched runs")
    watched = _Watched(opened, workers, target, watched_rows, cancel, resolved.name)
    dynamic, watch_problem = watched.findings(comparison.equal is True)
    findings += dynamic + _event_findings(opened, comparison.watch_events + watched.events)
    if as_in_job is not None:
        findings += as_in_job.findings(watched.analysed_plan)
        if as_in_job.problem:
            watch_problem = "; ".join(p for p in (watch_problem, as_in_job.problem) if p)
    file = f"{CANDIDATE_DIR}/{name}.py"
    hidden_crashes = comparison.original_raised.candidate_returned - comparison.original_raised.allowed_by_deviation
    if hidden_crashes:
        example = next((m for m in comparison.mismatches if m.kind == RAISE_KIND), None)
        findings.append(_dynamic("hides_failures", file, f"returned a value on {hidden_crashes} of {comparison.original_raised.count} rows where the original raised" + (f", e.g. args {example.args}: the original {example.expected}, the candidate returned {example.actual}" if example else "")))
    if comparison.device_activity is not None:
        findings += [_dynamic(problem.rule, file, f"device counters: {problem.message}") for problem in comparison.device_activity.problems]

    blocking = [f for f in findings if f.severity == "block"]
    reasons = [f"{f.rule} ({f.check}, {f.file}:{f.line}): {f.evidence}" for f in blocking]
    if watch_problem:
        reasons.append(watch_problem)
    if comparison.error:
        reasons.append(f"the candidate could not be compared: {comparison.error}")
    elif comparison.equal is None:
        reasons.append(f"no verdict from byte_compare: {comparison.evidence.note}")
    elif not comparison.equal:
        mismatched = sum(s.mismatched for s in comparison.sources)
        reasons.append(f"byte_compare found {mismatched} mismatching rows" + (f" and {'; '.join(comparison.contract_problems)}" if comparison.contract_problems else ""))
    run_id = new_run_id()
    result_path = opened.state_dir / "runs" / run_id / "audit_candidate.json"
    confined = comparison.confined and watched.confined
    how = comparison.confinement if comparison.confinement == watched.confinement or not watched.confinement else f"{comparison.confinement}; watched runs: {watched.confinement}"
    result = AuditCandidateResult(
        workspace=str(opened.path),
        candidate=name,
        verdict="FAIL" if reasons else "PASS" if confined else "PASS (unconfined)",
        reasons=reasons,
        findings=findings,
        comparison=_summary(comparison),
        tests="not consulted: verify judges the cases as they are" if opened.from_scratch else "frozen as recorded" if freeze_record(opened) else "not frozen",
        backend=comparison.backend,
        simulated=comparison.simulated,
        gpu_verified=comparison.gpu_verified,
        backend_note=comparison.backend_note,
        device_activity=comparison.device_activity,
        confined=confined,
        confinement=how,
        watched_rows_compared=watched.compared,
        duration_s=round(time.monotonic() - started, 3),
        result_path=str(result_path),
    )
    result_path.parent.mkdir(parents=True, exist_ok=True)
    result_path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
    _record_latest(opened, result)
    report(3, 3, result.verdict)
    listed = sorted(findings, key=lambda finding: finding.severity != "block")
    return result.model_copy(update={"findings": listed[:MAX_LISTED_FINDINGS], "findings_left_out": max(0, len(listed) - MAX_LISTED_FINDINGS)})


def passed_here_for(workspace: Workspace, name: str, master: str, what: str) -> str | None:
    """What `what` may run on `master`: None in local mode (every process confined here); on a remote master,
    whose executors are not ours to seal, the digest of candidate `name`'s bytes that audit_candidate passed
    here, so the run can pin them; a ToolError when its current bytes have no PASS."""
    if confinement.network_need(master) is None:
        return None
    entry, stale = candidate_results.shown(workspace, "audits", name)
    if entry is not None and not stale and str(entry.get("verdict", "")).startswith("PASS") and entry.get("candidate_digest"):
        return str(entry["candidate_digest"])
    latest = "no audit recorded" if entry is None else f"the latest audit of other bytes was {entry.get('verdict')}" if stale else f"its audit on these bytes was {entry.get('verdict')}"
    raise ToolError(
        f"{what} on {master} would run candidate {name!r} on executors outside this machine's confinement, so a candidate runs there only "
        f"after audit_candidate has passed it here on its current bytes ({latest}). Run audit_candidate(workspace, {name!r}) (it runs locally), "
        "then call this again; or pass master='local[*]' (local mode runs confined)."
    )


def _record_latest(workspace: Workspace, result: AuditCandidateResult) -> None:
    """The verdict, for workspace_status and the report (current while the candidate, original and deviations are)."""
    candidate_results.record(
        workspace,
        "audits",
        result.candidate,
        {
            "verdict": result.verdict,
            "blocking": sum(1 for f in result.findings if f.severity == "block"),
            "comparison_equal": result.comparison.equal,
            "rows_compared": result.comparison.rows_compared,
            "tests": result.tests,
            "result_path": result.result_path,
        },
    )


def _static_findings(workspace: Workspace, name: str) -> list[AuditFinding]:
    path = candidate_path(workspace, f"candidate:{name}")
    source = path.read_text(encoding="utf-8")
    try:
        kind = declared_target(source, name)
    except BadCandidate as exc:
        raise ToolError(f"{exc}; fix the candidate (run_tests shows the same problem) and audit again.") from None
    case_values = _case_literals(workspace)
    original_values = source_literals(workspace.verified_original())
    # Struct field names come from the declared types (aether.toml), not from the tests' expectations.
    udf = workspace.config.udf
    original_values |= set().union(*(field_names(parse_type(text)) for text in [udf.return_type, *(a.type for a in udf.args)]))
    entry_point = "build" if kind == "sql" else "evaluate"
    found: list[cheat_rules.RuleFinding] = []
    files = [path] + [p for p in cheat_rules.imported_workspace_modules(source, workspace.path / CANDIDATE_DIR, workspace.path) if p != path]
    for file in files:
        try:
            text = job_constants.inline(workspace, file.read_text(encoding="utf-8"), file.relative_to(workspace.path).as_posix())
            found += cheat_rules.check_candidate(text, file.relative_to(workspace.path).as_posix(), kind, case_values, original_values, entry_point)
        except (SyntaxError, UnicodeDecodeError) as exc:
            raise ToolError(f"{file.relative_to(workspace.path)} cannot be parsed ({exc}); fix it and audit again.") from None
    return [AuditFinding(check="static", **f.__dict__) for f in found]


def _job_load_findings(workspace: Workspace, name: str, resolved: Resolved) -> list[AuditFinding]:
    """The candidate imported as the converted job imports it: in a confined child, before any SparkSession exists."""
    from aether_mcp.tools.job_conversion import IMPORT_TIMEOUT_S

    path = candidate_path(workspace, f"candidate:{name}")
    folder = workspace.state_dir / "runs" / new_run_id() / "job-load"
    folder.mkdir(parents=True)
    module = f"{name}.py"
    request = {"files": {module: job_constants.inline(workspace, path.read_text(encoding="utf-8"), f"candidate/{module}")}, "job_dir": str(path.parent), "main": module}
    child = confined_child.run(
        workspace, "aether_mcp.confined.import_check", request, folder=folder, result_name="result.json", timeout_s=IMPORT_TIMEOUT_S, cancel=None, read=[str(path.parent)], env_extra=resolved.env()
    )
    raw = child.raw or {}
    if raw.get("imported"):
        return []
    why = raw.get("error") or (f"importing it took more than {IMPORT_TIMEOUT_S}s" if child.ended.timed_out else f"the import check failed (exit {child.ended.returncode}): {child.ended.tail[-400:]}")
    line = None
    if f"(at {module}:" in why:
        try:
            line = int(why.rsplit(f"(at {module}:", 1)[1].split(")")[0])
        except ValueError:
            line = None
    file = f"{CANDIDATE_DIR}/{module}"
    return [AuditFinding(rule="fails_in_job", severity="block", check="dynamic", file=file, line=line, evidence=f"imported before any SparkSession exists, as the converted job imports it: {why}", why=cheat_rules.WHY["fails_in_job"], fix=cheat_rules.FIX["fails_in_job"])]


def _kind(workspace: Workspace, name: str) -> str:
    source = candidate_path(workspace, f"candidate:{name}").read_text(encoding="utf-8")
    try:
        return declared_target(source, name)
    except BadCandidate:
        return "unknown"


class _AsInTheJob:
    """A sql candidate built as its job builds it (PySpark's classic Columns, a SparkSession of its own), in a confined child.

    The judge builds a sql candidate on Spark Connect's client-side Columns in a throwaway process
    (aether_mcp.confined.sql_build); a build that can tell the two apart could give the judge one
    expression and the job another. The child starts with the audit and is read after the watched
    runs: its analysed plan must be the one the judge analysed.
    """

    def __init__(self, workspace: Workspace, name: str, resolved: Resolved, cancel: threading.Event | None) -> None:
        self.file = f"{CANDIDATE_DIR}/{name}.py"
        path = candidate_path(workspace, f"candidate:{name}")
        self.request = {
            "source": job_constants.inline(workspace, path.read_text(encoding="utf-8"), self.file),
            "module": f"{workspace.config.udf.name}_{name}",  # the name apply_conversion gives it beside the job
            "args": [arg.name for arg in workspace.config.udf.args],
            "config": workspace.config.model_dump(mode="json"),
        }
        self.workspace, self.resolved, self.cancel = workspace, resolved, cancel
        self.outcome: dict[str, Any] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        folder = self.workspace.state_dir / "runs" / new_run_id() / "as-in-job"
        folder.mkdir(parents=True)
        try:
            child = confined_child.run(
                self.workspace, "aether_mcp.confined.classic_build", self.request, folder=folder, result_name="result.json",
                timeout_s=AS_IN_JOB_TIMEOUT_S, cancel=self.cancel, read=[], env_extra=self.resolved.env(), keep=(STARTED,),
            )
            why = None if child.raw else f"it took more than {AS_IN_JOB_TIMEOUT_S}s" if child.ended.timed_out else f"exit {child.ended.returncode}: {child.ended.tail[-300:]}"
            self.outcome = {"raw": child.raw, "why": why, "started": (folder / STARTED).is_file(), "log": str(folder)}
        except Exception as exc:  # the check could not run: a reason below, never lost
            self.outcome = {"raw": None, "why": f"{exc.__class__.__name__}: {exc}", "started": False, "log": str(folder)}

    @property
    def problem(self) -> str | None:
        """Why the check could not run at all, no fault of the candidate's (its SparkSession never started), else None."""
        self.thread.join()
        if self.outcome.get("raw") or self.outcome.get("started"):
            return None
        return f"the build as its job does it could not be checked: its SparkSession did not start ({self.outcome.get('why')}; files: {self.outcome.get('log')}); run audit_candidate again"

    def findings(self, judged: str | None) -> list[AuditFinding]:
        self.thread.join()
        if self.cancel is not None and self.cancel.is_set():
            raise ToolError("audit_candidate was cancelled; nothing is left running.")
        raw = self.outcome.get("raw")
        if judged is None:
            return []  # the judge could not analyse its own build: the watched runs report why
        if not raw and self.problem:
            return []  # the session never started: a reason of the audit's (see audit_candidate), not a finding
        if not raw:
            return [_dynamic("fails_in_job", self.file, f"importing it and calling build(*cols) as its job does did not finish ({self.outcome.get('why')})")]
        if not raw.get("built"):
            return [_dynamic("fails_in_job", self.file, f"build(*cols) failed when built as its job builds it (PySpark's classic Columns, in a SparkSession): {raw.get('error')}")]
        if raw.get("plan") != judged:
            return [_dynamic("watch_dependent", self.file, "build(*cols) gives the job another expression than the one judged: built as its job builds it, the plan is\n"
                             f"{_clip(raw.get('plan'))}\nwhere the judged build gave\n{_clip(judged)}")]
        return []


def _clip(text: Any, limit: int = 600) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


class _Watched:
    """The candidate run under watch in its worker, every output compared with the original."""

    def __init__(self, workspace: Workspace, workers: WorkerPool, target: str, watched_rows: tuple[int, int], cancel: threading.Event | None, backend: str) -> None:
        self.workspace, self.workers, self.target, self.cancel, self.backend = workspace, workers, target, cancel, backend
        self.file = f"{CANDIDATE_DIR}/{target.removeprefix('candidate:')}.py"
        small_rows, large_rows = watched_rows
        mined = mine(workspace.verified_original())
        self.small = hidden_rows(workspace.config, mined, small_rows, draws.seed("audit.watched_small"))
        self.large = hidden_rows(workspace.config, mined, large_rows, draws.seed("audit.watched_large"))
        job_batch = layouts.job_batch(workspace.config.spark.conf)
        # one batch each (the large one above the job's batch size); the job's own batch size; one row per batch
        self.runs = {
            "small": (self.small, len(self.small) + 1),
            "large": (self.large, max(len(self.large), job_batch) + 1),
            "tiny": (self.small[:TINY_BATCH_ROWS], 1),
        }
        if workspace.config.udf.pandas_form == "aggregate":
            # An aggregation is called once per group, whatever the batches: the same groups with few
            # values and with eight times as many, so per-value Python work shows as growth.
            groups = [row for row in self.small if all(values for values in row)][: max(1, small_rows // 4)]
            self.small = [[values[:GROUP_VALUES] for values in row] for row in groups]
            self.large = [[values[:GROUP_VALUES] * LARGE_GROUP_FACTOR for values in row] for row in groups]
            self.runs = {"small": (self.small, len(self.small) + 1), "large": (self.large, len(self.large) + 1)}
            job_batch = 0
        # the large rows again at the job's own batch size, unwatched (only the outputs matter), when
        # that layout differs from the large run's single batch
        self.job_batch = job_batch if len(self.large) > job_batch else None
        # the large rows once more across as many partitions as a job's shuffle makes (drawn up to
        # 200), some empty, in a drawn batch size: results that depend on the partition differ here
        self.wide_layout = layouts.draw(
            random.Random(draws.seed("audit.wide_layout")), job_batch or layouts.JOB_BATCH_DEFAULT, len(self.large), fewest=layouts.MIN_WIDE_PARTITIONS, most=layouts.MAX_PARTITIONS
        )
        # rows of the large run in batches of every length from 1 to the job's batch size (a job's
        # partial last batches among them), each a slice of the large rows at a random offset
        self.splits: dict[str, list[int]] = {}
        self.sweep_index: list[int] = []
        self.sweep_lengths: list[int] = []  # per swept row, the length of the batch it came in
        kind = declared_target(candidate_path(workspace, target).read_text(encoding="utf-8"), target.removeprefix("candidate:"))
        longest = min(len(self.large), job_batch, MAX_SWEPT_LENGTH.get(kind, 0))
        if workspace.config.udf.pandas_form != "aggregate" and longest >= 1:
            rng = random.Random(draws.seed("audit.sweep"))
            lengths = layouts.sweep(rng, longest)
            for length in lengths:
                start = rng.randrange(len(self.large) - length + 1)
                self.sweep_index += range(start, start + length)
                self.sweep_lengths += [length] * length
            self.splits = {"sweep": lengths}
            self.runs["sweep"] = ([self.large[i] for i in self.sweep_index], len(self.sweep_index) + 1)
        self.events: list[WatchEvent] = []
        self.analysed_plan: str | None = None
        self.confined = False
        self.confinement = ""
        self.compared = 0

    def findings(self, compared_equal: bool) -> tuple[list[AuditFinding], str | None]:
        """Findings of the watched runs, and why the watched runs could not finish (a FAIL reason), if they could not.

        Watched outputs that differ are a finding of their own when the comparison found the
        candidate equal: it then behaves differently under watch, or only at the batch sizes the
        watched runs use. When the comparison already failed, they are more of the same, unless only the runs in other
        batch layouts differ (then they name the cause: batch_dependent).
        """
        file = self.file
        try:
            watched = self.workers.audit(self.workspace, self.target, self.runs, splits=self.splits, cancel=self.cancel, backend=self.backend)
        except EvaluationFailed as exc:
            self.events = parse(exc.events)
            if exc.kind == "cancelled":
                raise ToolError("audit_candidate was cancelled; nothing is left running.") from None
            if "TripwireTriggered" in str(exc) or "tripwire" in str(exc):
                return [_dynamic("reaches_original", file, f"the candidate used the original while loading: {exc}")], None
            if "aether-mcp watch:" in str(exc):
                return [_dynamic("escape", file, f"the watch refused what the candidate did while loading: {exc}")], None
            return [], f"the watched runs could not finish ({exc}); a candidate must run under watch as it runs in byte_compare"
        self.confined, self.confinement = watched["confinement"].confined, watched["confinement"].how
        self.analysed_plan = watched.get("analysed_plan")
        self.events = parse(watched.get("events"))
        findings = []
        for node in watched.get("plan_python_nodes", []):
            findings.append(_dynamic("row_at_a_time", file, f"the executed plan evaluates Python ({node})"))
        for call in watched.get("plan_jvm_calls", []):
            findings.append(_dynamic("escape", file, f"the executed plan calls into the JVM or reads files ({call})"))
        findings += self._expression_findings(watched.get("plan_expressions") or [])
        grouped = self.workspace.config.udf.pandas_form == "aggregate"
        if not grouped:
            try:
                wide = self.workers.evaluate("candidate", self.workspace, self.target, self.large, shape=self.wide_layout, typed=True, cancel=self.cancel, backend=self.backend)
            except EvaluationFailed as exc:
                return findings, f"the run in a wide layout ({self.wide_layout}) could not finish ({exc})"
            self.events += parse(wide.events)
        if watched["kind"] == "sql":
            if compared_equal and not grouped:
                findings += self._compared_with_original({"wide": {"outputs": wide.outputs}})
            return findings, None
        runs = watched["runs"]
        if not grouped:
            runs["wide"] = {"outputs": wide.outputs}
        small, large = runs["small"], runs["large"]
        # Calls that do not grow with the rows are per-batch helpers; per-row work grows with them.
        if small["rows"] and large["rows"] >= 4 * small["rows"] and large["calls"] > 2 * small["calls"] + 10:
            findings.append(
                _dynamic(
                    "row_at_a_time",
                    file,
                    f"{small['calls']} Python steps (calls and lines) in the candidate's code for {small['rows']} rows, {large['calls']} for {large['rows']}: the work grows with the rows",
                )
            )
        if any(run.get("inputs_changed") for run in runs.values()):
            findings.append(_dynamic("tampering", file, "the candidate changed its input columns in place"))
        changed_state = sorted({name for run in runs.values() for name in run.get("state_changed", [])})
        if changed_state:
            findings.append(_dynamic("memoization", file, f"module-level state changed while the candidate ran: {', '.join(changed_state[:10])} (compared before and after every watched call)"))
        for one, tiny in zip(small["outputs"], runs["tiny"]["outputs"] if "tiny" in runs else []):
            difference = classify(one, tiny)
            if difference is not None:
                findings.append(_dynamic("batch_dependent", file, f"one batch vs one-row batches: {difference.detail}"))
                break
        if self.job_batch:
            try:
                at_job = self.workers.evaluate(
                    "candidate", self.workspace, self.target, self.large, shape={"partitions": 1, "max_records_per_batch": self.job_batch}, typed=True, cancel=self.cancel, backend=self.backend
                )
            except EvaluationFailed as exc:
                return findings, f"the run at the job's Arrow batch size ({self.job_batch}) could not finish ({exc})"
            self.events += parse(at_job.events)
            runs["job"] = {"outputs": at_job.outputs}
        differences = self._compared_with_original(runs)
        # With the comparison already failed, differing watched outputs are more of the same, unless only the runs in
        # other batch layouts differ while every single-batch run is right: that names the cause, batch dependence.
        if compared_equal or (differences and all(f.rule == "batch_dependent" for f in differences)):
            findings += differences
        left_threads = max(run.get("threads_left", 0) for run in runs.values())
        left_children = max(run.get("children_left", 0) for run in runs.values())
        if left_threads or left_children:
            findings.append(_dynamic("escape", file, f"left {left_threads} threads and {left_children} child processes running"))
        return findings, None

    def _expression_findings(self, classes: list[str]) -> list[AuditFinding]:
        """A sql candidate's analyzed expressions against the allow-list; each refusal at the line that spells it, where one does."""
        if not classes:
            return []
        source = candidate_path(self.workspace, self.target).read_text(encoding="utf-8").splitlines()
        findings = []
        for name, why in sql_functions.refused(classes):
            spelled = sql_functions.spellings(name)
            line = next((number for number, text in enumerate(source, 1) if any(re.search(rf"\b{re.escape(word)}\b", text.lower()) for word in spelled)), None)
            finding = _dynamic("not_deterministic", self.file, f"the analyzed plan holds {name}, which {why}")
            findings.append(finding.model_copy(update={"line": line}))
        return findings

    def _compared_with_original(self, runs: dict[str, Any]) -> list[AuditFinding]:
        """Watched outputs are outputs: each run's rows against the original's, under the same policy as byte_compare."""
        comparison = Comparison(self.workspace, self.workers, self.target, self.cancel, self.backend)
        try:
            needs_small = any(label in runs for label in ("small", "tiny"))
            expected_small = self.workers.evaluate("reference", self.workspace, "original", self.small, typed=True, cancel=self.cancel).outputs if needs_small else []
            expected_large = self.workers.evaluate("reference", self.workspace, "original", self.large, typed=True, cancel=self.cancel).outputs
        except EvaluationFailed as exc:
            return [_dynamic("watch_dependent", self.file, f"the original could not be evaluated on the watched rows ({exc}), so they could not be compared")]
        expected = {"small": expected_small, "large": expected_large, "job": expected_large, "wide": expected_large, "tiny": expected_small[:TINY_BATCH_ROWS]}
        expected["sweep"] = [expected_large[i] for i in self.sweep_index]
        compared = {label: (rows, batch, "watch_dependent", "watched run") for label, (rows, batch) in self.runs.items() if label in runs}
        if "job" in runs:
            compared["job"] = (self.large, self.job_batch, "batch_dependent", "run at the job's batch size")
        if "sweep" in runs:
            lengths = self.splits["sweep"]
            compared["sweep"] = (self.runs["sweep"][0], f"every length from 1 to {lengths[-1]}", "batch_dependent", f"run in {len(lengths)} batches of lengths {lengths[0]}, {lengths[1] if len(lengths) > 1 else ''}... {lengths[-1]}")
        if "wide" in runs:
            shape = self.wide_layout
            what = f"run in {shape['partitions']} partitions ({shape['empty_partitions']} of them empty)"
            compared["wide"] = (self.large, shape["max_records_per_batch"], "batch_dependent", what)
        findings = []
        for label, (rows, batch, rule, what) in compared.items():
            wrong, example = 0, ""
            for position, (row, want, got) in enumerate(zip(rows, expected[label], runs[label]["outputs"])):
                self.compared += not isinstance(want, Raised)
                found, _ = comparison.difference(row, want, got)  # where the original raised, the candidate must fail too
                if found is not None:
                    wrong += 1
                    where = f" in a batch of {self.sweep_lengths[position]} rows" if label == "sweep" else ""
                    example = example or f"args {[repr(v) for v in row]}{where}: {found.detail}"
            if wrong:
                findings.append(_dynamic(rule, self.file, f"{what} '{label}' ({len(rows)} rows, Arrow batches of {batch}): {wrong} rows differ from the original, e.g. {example}"))
        return findings


GROUP_VALUES = 3  # values per group in an aggregation's small watched run
# The longest swept batch: the job's batch size, and for kernels (one Python call per thread under
# numba's CUDA simulator) at most 1,000 rows.
MAX_SWEPT_LENGTH = {"sql": 0, "vectorized": 10_000, "kernel": 1_000}
LARGE_GROUP_FACTOR = 8  # the large run's groups hold this many times as many


def _event_findings(workspace: Workspace, events: list[WatchEvent]) -> list[AuditFinding]:
    """Each kind of thing the watch saw, once per place in the candidate's code."""
    found: dict[tuple[str, str, int | None], AuditFinding] = {}
    for event in events:
        rule = rule_of(event)
        try:
            file = Path(event.file).resolve().relative_to(workspace.path).as_posix()
        except (ValueError, OSError):
            file = event.file
        key = (rule, file, event.line)
        if key not in found:
            found[key] = AuditFinding(rule=rule, severity="block", check="dynamic", file=file, line=event.line, evidence=f"watch: {event.text()}", why=cheat_rules.WHY[rule], fix=cheat_rules.FIX[rule])  # type: ignore[arg-type]
    return list(found.values())


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
        evidence=result.evidence.note,
        original_raised=result.original_raised.count,
        mismatched={s.source: s.mismatched for s in result.sources},
        error=result.error,
        contract_problems=result.contract_problems,
        declared_deviations=result.policy.declared_deviations,
        result_path=result.result_path,
    )
