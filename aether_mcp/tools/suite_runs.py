"""run_tests: the workspace's pytest suite, in its own process, against the original or a candidate.

pytest runs as `python -I -m pytest` with plugin autoload disabled, no conftest files, the
harness's own ini file and plugin, stdin closed, its own process group and a hard timeout that
kills the group. The tests are agent code, so the process is confined: it reads tests/ and the
Python environment, writes only a scratch folder made for the run (its report and progress
stream are copied into .aether/ afterwards), and names nothing of the server's state.
`udf_under_test` is bound to the target through a warm Spark worker: the server gives the worker
the target's source, the run only a handle to it. Results come from the structured report the
harness plugin writes, never from the exit code.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field, ValidationError

from aether_mcp import paging
from aether_mcp.backend import CPU, Resolved
from aether_mcp.judge.watch_events import WatchEvent, parse
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import confinement, subprocess_runner
from aether_mcp.processes.worker_pool import EvaluationFailed, WorkerPool
from aether_mcp.tools import device_proof
from aether_mcp.tools.workspaces import latest_runs_path, tests_digest
from aether_mcp.workspace import TESTS_DIR, Workspace, new_run_id
from aether_mcp.workspace.candidates import check_target
from aether_mcp.workspace.frozen_tests import require_frozen_tests_intact

MAX_TIMEOUT_S = 3600
MAX_REPORTED_TESTS = 500
Progress = Callable[[int, int | None, str], None]
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")


class TestOutcome(BaseModel):
    __test__ = False  # not a pytest test class

    nodeid: str
    outcome: Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
    message: str = Field(description="failure text, capped; the full text is in the log")
    duration_s: float = 0.0


class RunTestsResult(BaseModel):
    workspace: str
    target: str
    run_id: str
    passed: int
    failed: int
    errors: int
    skipped: int
    xfailed: int
    total: int
    tests: list[TestOutcome]
    tests_truncated: int = Field(0, description="outcomes left out of `tests` (all are in the report file)")
    timed_out: bool
    duration_s: float
    log_path: str = Field(description="full pytest output (readable with read_file)")
    report_path: str
    output_truncated: bool = Field(description="the test output exceeded the log cap")
    backend: Literal["cpu", "gpu"] = Field("cpu", description="where the target ran: the CPU backend (pandas/NumPy, kernels simulated) or the GPU one")
    simulated: bool = Field(False, description="a kernel candidate ran under numba's CUDA simulator: correctness only, no GPU speed")
    backend_note: str = ""
    confined: bool = Field(False, description="the test process ran confined (it could read only tests/ and the Python environment, write only its scratch)")
    confinement: str = Field("", description="how the test process and the worker were confined, or why not")
    watch_events: list[WatchEvent] = Field(default_factory=list, description="what the watch saw the test code and the target do (audit_candidate fails a candidate on any of these)")


def run_tests(
    root: SandboxRoot,
    workers: WorkerPool,
    workspace: str,
    target: str,
    timeout_s: int | None = None,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    backend: str | None = None,
) -> RunTestsResult:
    opened = Workspace.open_intact(root, workspace)
    target = check_target(opened, target)
    if target != "original":
        require_frozen_tests_intact(opened, "run_tests")
    if timeout_s is not None and not (1 <= timeout_s <= MAX_TIMEOUT_S):
        raise ToolError(f"timeout_s must be between 1 and {MAX_TIMEOUT_S} seconds (got {timeout_s}).")
    digest = tests_digest(opened)
    resolved = device_proof.choose(opened, target, backend) if not target.startswith("canary:") else None
    result = run_suite(opened, target, workers, timeout_s=timeout_s, cancel=cancel, progress=progress, resolved=resolved)
    with opened.lock():
        _record_latest(opened, result, digest)
    return result


def run_suite(
    opened: Workspace,
    target: str,
    workers: WorkerPool,
    timeout_s: int | None = None,
    cancel: threading.Event | None = None,
    progress: Progress | None = None,
    resolved: Resolved | None = None,
) -> RunTestsResult:
    """The workspace's pytest suite against `target` ('original', 'candidate:<name>' or a 'canary:<value>'), on `resolved` (CPU by default)."""
    resolved = resolved or CPU
    test_files = sorted((opened.path / TESTS_DIR).glob("test_*.py")) if (opened.path / TESTS_DIR).is_dir() else []
    if not test_files:
        raise ToolError("the workspace has no tests: write tests/test_*.py files (tests/test_behaviour.py runs every case in tests/cases.py).")
    # A canary target needs no Spark: the harness plugin answers it itself.
    worker, context_id = None, ""
    if not target.startswith("canary:"):
        try:
            worker, context_id = workers.bind("reference" if target == "original" else "candidate", opened, target, resolved.name)
        except EvaluationFailed as exc:
            raise ToolError(f"the {target} worker could not take the run ({exc}); call run_tests again.") from None

    run_id = new_run_id()
    run_dir = opened.state_dir / "runs" / run_id
    run_dir.mkdir(parents=True)
    log_path = run_dir / "pytest.log"
    limit = timeout_s or opened.config.tests.timeout_s
    with confinement.Scratch("tests") as scratch:
        report_path = scratch.path / "report.json"
        progress_path = scratch.path / "progress.jsonl"
        argv = [
            sys.executable,
            "-I",
            "-B",
            "-m",
            "pytest",
            "-p",
            "aether_mcp.confined.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "--noconftest",
            # collection starts at tests/: the confined run may not list the folders above it
            "--confcutdir",
            str(opened.path / TESTS_DIR),
            "-c",
            str(resources.files("aether_mcp") / "confined" / "pytest.ini"),
            "--rootdir",
            str(opened.path),
            "--tb=short",
            "-q",
            TESTS_DIR,
        ]
        tests_policy = confinement.Policy(read=[str(opened.path / TESTS_DIR)], write=[str(scratch.path)])
        argv, status = confinement.wrap(argv, tests_policy, workers.forbidden + [opened.root.path])
        env = confinement.environment(
            scratch.path,
            {
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "AETHER_WORKER_SOCKET": worker.socket_path if worker else "",
                "AETHER_WORKER_TOKEN": worker.token if worker else "",
                "AETHER_CONTEXT_ID": context_id,
                "AETHER_TARGET": target,
                "AETHER_TESTS_DIR": str(opened.path / TESTS_DIR),
                "AETHER_REPORT_PATH": str(report_path),
                "AETHER_PROGRESS_PATH": str(progress_path),
                "AETHER_DEADLINE": str(time.time() + limit),
                "TZ": opened.config.spark.conf.get("spark.sql.session.timeZone", "UTC"),
            },
            confined=status.confined,
        )
        watcher = _ProgressWatcher(progress_path, progress)
        outcome = subprocess_runner.run(argv, cwd=opened.path, log_path=log_path, timeout_s=limit, env=env, cancel=cancel, on_poll=watcher.poll)
        watcher.poll()  # the last tests often finish between two polls
        for produced in (report_path, progress_path):
            if produced.is_file() and not produced.is_symlink():
                shutil.copyfile(produced, run_dir / produced.name)
    report_path, progress_path = run_dir / "report.json", run_dir / "progress.jsonl"
    if (outcome.timed_out or outcome.cancelled) and worker is not None:
        # The worker may be stuck inside the hung evaluation; the next run gets a fresh one.
        workers.discard(worker)
    if outcome.cancelled:
        raise ToolError(f"run_tests was cancelled; the test process and its Spark worker were stopped (log: {log_path}).")
    tests = _read_report(report_path, progress_path, outcome, limit)
    counts = {kind: sum(1 for t in tests if t.outcome == kind) for kind in OUTCOMES}
    if not tests and not outcome.timed_out:
        raise ToolError(
            f"no tests were collected from {TESTS_DIR}/ (pytest exit code {outcome.returncode}; log: {log_path}). "
            "Test files must be named test_*.py and hold functions named test_*."
        )
    shown, left_out = paging.fit(tests, MAX_REPORTED_TESTS, budget=paging.PAGE_BYTES // 2)
    return RunTestsResult(
        workspace=str(opened.path),
        target=target,
        run_id=run_id,
        passed=counts["passed"] + counts["xpassed"],
        failed=counts["failed"],
        errors=counts["error"],
        skipped=counts["skipped"],
        xfailed=counts["xfailed"],
        total=len(tests),
        tests=shown,
        tests_truncated=left_out,
        timed_out=outcome.timed_out,
        duration_s=outcome.duration_s,
        log_path=str(log_path),
        report_path=str(report_path),
        output_truncated=outcome.log_truncated,
        backend=resolved.name,  # type: ignore[arg-type]
        simulated=resolved.simulated,
        backend_note=resolved.note,
        confined=status.confined and (worker is None or worker.role == "reference" or worker.confinement.confined),
        confinement=f"test process: {status.how}" + (f"; {worker.role} worker: {worker.confinement.how}" if worker else ""),
        watch_events=_events(report_path),
    )


def _events(report_path: Path) -> list[WatchEvent]:
    try:
        data = json.loads(report_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return parse([*data.get("test_events", []), *data.get("target_events", [])])


class _ProgressWatcher:
    """Turns the plugin's progress stream into progress callbacks while pytest runs."""

    def __init__(self, path: Path, callback: Progress | None) -> None:
        self.path = path
        self.callback = callback
        self.offset = 0
        self.total: int | None = None
        self.done = 0
        self.last_reported = -1

    def poll(self) -> None:
        if self.callback is None or not self.path.exists():
            return
        with open(self.path, encoding="utf-8") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind("\n") + 1]
        self.offset += len(complete.encode("utf-8"))
        for line in complete.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "collected":
                self.total = int(event.get("count", 0))
            elif event.get("event") == "finished":
                self.done += 1
        if self.done != self.last_reported:
            self.last_reported = self.done
            self.callback(self.done, self.total, f"{self.done}/{self.total if self.total is not None else '?'} tests finished")


def _read_report(report_path: Path, progress_path: Path, outcome: subprocess_runner.ProcessResult, limit: float) -> list[TestOutcome]:
    if report_path.exists():
        try:
            data = json.loads(report_path.read_text(encoding="utf-8"))
            return [TestOutcome.model_validate(entry) for entry in data["tests"]]
        except (ValueError, KeyError, TypeError, ValidationError):
            return [TestOutcome(nodeid="<report>", outcome="error", message=f"the test process wrote an unreadable report; see the log. Last output:\n{outcome.tail[-1500:]}")]
    # No report: the process was killed or died. Rebuild what finished from the progress stream.
    finished: dict[str, TestOutcome] = {}
    started: list[str] = []
    if progress_path.exists():
        for line in progress_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
                if event.get("event") == "start":
                    started.append(str(event.get("nodeid")))
                elif event.get("event") == "finished":
                    finished[str(event["nodeid"])] = TestOutcome.model_validate({k: v for k, v in event.items() if k != "event"})
            except (ValueError, KeyError, TypeError, ValidationError):
                continue
    tests = list(finished.values())
    unfinished = [nodeid for nodeid in started if nodeid not in finished]
    if outcome.timed_out:
        culprit = unfinished[-1] if unfinished else "<session>"
        tests.append(TestOutcome(nodeid=culprit, outcome="error", message=f"timed out: the run was killed after {limit:.0f}s while this test was running"))
    else:
        culprit = unfinished[-1] if unfinished else "<session>"
        tests.append(
            TestOutcome(
                nodeid=culprit,
                outcome="error",
                message=f"the test process exited (code {outcome.returncode}) before writing its report. Last output:\n{outcome.tail[-1500:]}",
            )
        )
    return tests


def _record_latest(workspace: Workspace, result: RunTestsResult, digest: str) -> None:
    path = latest_runs_path(workspace)
    try:
        latest = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        latest = {}
    latest[result.target] = {
        "run_id": result.run_id,
        "passed": result.passed,
        "failed": result.failed,
        "errors": result.errors,
        "skipped": result.skipped,
        "timed_out": result.timed_out,
        "tests_digest": digest,
    }
    path.write_text(json.dumps(latest, indent=2, sort_keys=True))

