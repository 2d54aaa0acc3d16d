"""`aether-mcp verify`: everything a reviewer needs before shipping, recomputed from the job source, trusting no record.

Nothing under `.aether/` is believed: not the signed manifest, not the freeze, not earlier
verdicts. The reference is extracted again from the job source named in `aether.toml` and must be
byte for byte what `original/` holds (and `aether.toml` what init would write); every case's
expectation is checked against that freshly loaded original through Spark; the coverage and
mutation gates are measured again on the cases as they are; the candidate gets a fresh
`audit_candidate` (with its own fresh `byte_compare`); and git says whether the job source is
tracked and unmodified. A same-user shell can rewrite every record and re-sign it with the key;
it cannot make these recomputations agree with a reference or a candidate it changed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp.judge.case_literals import read_cases
from aether_mcp.judge.compare import difference
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.wire.value_codec import Raised
from aether_mcp.workspace import CANDIDATE_DIR, STATE_DIR, TESTS_DIR, Workspace
from aether_mcp.workspace.derivation import rederive

GIT_TIMEOUT_S = 30
CASES_SHOWN = 5


class Check(BaseModel):
    name: str
    status: Literal["pass", "fail", "warn", "not run"]
    detail: str


class VerifyResult(BaseModel):
    workspace: str
    candidate: str | None
    passed: bool = Field(description="every check passed: ship the candidate")
    checks: list[Check]


def verify(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    candidate: str | None = None,
    hidden_rows: int = 20_000,
    watched_rows: tuple[int, int] = (1_000, 20_000),
) -> VerifyResult:
    """Recompute every promise about `workspace` and `candidate` from the job source and the files as they are.

    `hidden_rows` and `watched_rows` are audit_candidate's (its defaults unless a test asks for fewer).
    """
    opened = Workspace.open(root, workspace)
    checks: list[Check] = []
    checks.append(_job_source(root, opened))
    derivation = rederive(root, opened.path, opened.config)
    if not derivation.matches or derivation.derived is None:
        checks.append(Check(name="reference", status="fail", detail="; ".join(derivation.problems)))
        rest = ("cases", "coverage", "mutation", "candidate")
        checks += [Check(name=name, status="not run", detail="the reference does not match the job source, so nothing judged against it can be trusted") for name in rest]
        return _result(opened, candidate, checks)
    checks.append(Check(name="reference", status="pass", detail=f"original/udf.py and {opened.config.udf.source}'s {opened.config.udf.name} agree byte for byte; aether.toml is what init_workspace writes for it"))
    trusted = Workspace.from_source(root, opened.path, derivation.derived.module_source)
    checks.append(_cases(trusted, workers))
    checks += _gates(root, workers, trusted)
    name = candidate or _recommended(opened)
    checks.append(_candidate(root, workers, trusted, name, hidden_rows, watched_rows))
    return _result(opened, name, checks)


def _result(opened: Workspace, candidate: str | None, checks: list[Check]) -> VerifyResult:
    passed = all(check.status in ("pass", "warn") for check in checks)
    return VerifyResult(workspace=str(opened.path), candidate=candidate, passed=passed, checks=checks)


def _job_source(root: SandboxRoot, opened: Workspace) -> Check:
    """Whether git shows the job source, and every local module the extraction drew from, tracked and unmodified."""
    files = [opened.config.udf.source, *sorted(opened.config.udf.modules)]
    checks = [_tracked_unmodified(root, path) for path in files]
    worst = next((c for status in ("fail", "warn") for c in checks if c.status == status), checks[0])
    if len(checks) == 1:
        return worst
    detail = "; ".join(check.detail for check in checks if check.status == worst.status)  # each names its file
    return Check(name="job source", status=worst.status, detail=detail)


def _tracked_unmodified(root: SandboxRoot, relative: str) -> Check:
    try:
        source = root.resolve(relative, what="source")
    except ToolError as exc:
        return Check(name="job source", status="fail", detail=str(exc))
    if not source.is_file():
        return Check(name="job source", status="fail", detail=f"{relative} does not exist any more")
    folder = source.parent

    def git(*args: str) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run(["git", "-C", str(folder), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None

    top = git("rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return Check(name="job source", status="warn", detail=f"{relative} is not in a git repository: nothing shows whether it changed since it was reviewed")
    tracked = git("ls-files", "--error-unmatch", "--", str(source))
    if tracked is None or tracked.returncode != 0:
        return Check(name="job source", status="warn", detail=f"{relative} is not tracked by git in {top.stdout.strip()}")
    status = git("status", "--porcelain", "--", str(source))
    if status is None or status.returncode != 0:
        return Check(name="job source", status="warn", detail="git could not say whether the job source changed")
    if status.stdout.strip():
        return Check(name="job source", status="fail", detail=f"{relative} has changes git has not committed ({status.stdout.strip()}): commit or restore them, then verify again")
    head = git("log", "-1", "--format=%h %s", "--", str(source))
    return Check(name="job source", status="pass", detail=f"{relative} is tracked by git and unmodified (last commit {head.stdout.strip() if head else '?'})")


def _cases(trusted: Workspace, workers: WorkerPool) -> Check:
    try:
        cases = read_cases(trusted.path / TESTS_DIR / "cases.py")
    except ToolError as exc:
        return Check(name="cases", status="fail", detail=str(exc))
    if not cases:
        return Check(name="cases", status="fail", detail="tests/cases.py has no cases: nothing pins the original's behaviour")
    try:
        outputs = workers.evaluate("reference", trusted, "original", [case["args"] for case in cases]).outputs
    except EvaluationFailed as exc:
        return Check(name="cases", status="fail", detail=f"the original could not be evaluated on the cases: {exc}")
    wrong = []
    for index, (case, actual) in enumerate(zip(cases, outputs)):
        if "raises" in case:
            problem = None if isinstance(actual, Raised) and actual.type == case["raises"] else f"expected it to raise {case['raises']}, got {actual!r}"
        else:
            problem = difference(case.get("expected"), actual)
        if problem:
            wrong.append(f"case {index} args={case['args']!r}: {problem}")
    if wrong:
        return Check(name="cases", status="fail", detail=f"{len(wrong)} of {len(cases)} cases do not say what the original returns: " + "; ".join(wrong[:CASES_SHOWN]))
    return Check(name="cases", status="pass", detail=f"all {len(cases)} cases hold for the original extracted from the job source, through Spark")


def _gates(root: SandboxRoot, workers: WorkerPool, trusted: Workspace) -> list[Check]:
    from aether_mcp.tools import spec_strength

    checks = []
    justified = spec_strength.justifications(trusted)
    for name, measure in (("coverage", spec_strength.coverage_report), ("mutation", spec_strength.mutation_score)):
        try:
            report = measure(root, workers, trusted)
        except ToolError as exc:
            checks.append(Check(name=name, status="fail", detail=str(exc)))
            continue
        shown = [f"{item}: {reason}" for item, reason in sorted(justified.items()) if item.startswith(("mutant:",) if name == "mutation" else ("line:", "branch:"))]
        claims = f"; it counts {len(shown)} justification(s), read them: {' | '.join(shown)}" if shown else ""
        checks.append(Check(name=name, status="pass" if report.gate.status == "pass" else "fail", detail=f"measured again on the current cases: {report.gate.detail}{claims}"))
    return checks


def _recommended(opened: Workspace) -> str | None:
    """The report's recommendation: only which candidate to verify, never a verdict."""
    try:
        data = json.loads((opened.path / STATE_DIR / "report" / "report.json").read_text(encoding="utf-8"))
        return data["recommendation"]["candidate"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _candidate(root: SandboxRoot, workers: WorkerPool, trusted: Workspace, name: str | None, hidden_rows: int, watched_rows: tuple[int, int]) -> Check:
    from aether_mcp.tools.cheat_audit import audit_candidate

    if not name:
        return Check(name="candidate", status="fail", detail="no candidate named and no report recommends one: pass --candidate NAME")
    if not (trusted.path / CANDIDATE_DIR / f"{name}.py").is_file():
        return Check(name="candidate", status="fail", detail=f"candidate/{name}.py does not exist")
    try:
        audit = audit_candidate(root, workers, trusted, name, hidden_rows_count=hidden_rows, watched_rows=watched_rows)
    except ToolError as exc:
        return Check(name="candidate", status="fail", detail=f"audit_candidate could not judge {name}: {exc}")
    comparison = audit.comparison
    seen = f"fresh byte_compare equal={comparison.equal} on {comparison.rows_compared} rows"
    if audit.verdict == "FAIL":
        return Check(name="candidate", status="fail", detail=f"audit_candidate {name}: FAIL ({seen}): " + "; ".join(audit.reasons[:4]))
    if audit.verdict != "PASS":
        return Check(name="candidate", status="warn", detail=f"audit_candidate {name}: {audit.verdict} ({seen}); {audit.confinement}")
    return Check(name="candidate", status="pass", detail=f"audit_candidate {name}: PASS ({seen}, {len(audit.findings) + audit.findings_left_out} findings)")


def render(result: VerifyResult) -> str:
    marks = {"pass": "ok  ", "fail": "FAIL", "warn": "warn", "not run": "skip"}
    lines = [f"aether-mcp verify {result.workspace}" + (f" (candidate {result.candidate})" if result.candidate else "")]
    lines += [f"  {marks[c.status]}  {c.name}: {c.detail}" for c in result.checks]
    lines.append("verified: ship it." if result.passed else "NOT verified: see the failing checks above.")
    return "\n".join(lines)


def main(root: str, workspace: str, candidate: str | None, as_json: bool) -> int:
    path = Path(root).expanduser()
    if not path.is_dir():
        print(f"aether-mcp verify: --root {root} is not a directory; give the server root that holds the workspace.")
        return 2
    workers = WorkerPool(forbidden=[path])
    try:
        try:
            result = verify(SandboxRoot(path), workers, workspace, candidate)
        except ToolError as exc:
            print(f"aether-mcp verify: {exc}")
            return 2
    finally:
        workers.close()
    print(result.model_dump_json(indent=2) if as_json else render(result))
    return 0 if result.passed else 1
