"""The pytest plugin `run_tests` loads into each test run: the `udf_under_test` fixture, the watch and the report.

The test run is confined like every process that runs agent code (the tests are the agent's):
it reads the workspace's tests/ and the Python environment, writes only its scratch folder.
`udf_under_test(rows)` sends argument rows to the Spark worker the server bound to this run's
target (the run names the bound context; it holds no source of its own) and returns the outputs
as Python values, in order; where the target raised on a row, the output is a `Raised` value.
The watch records what the test code does; the plugin writes a structured report (and a
progress stream) for the server. The fixture belongs to the harness: a test file that defines
its own `udf_under_test` errors.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from aether_mcp.confined import watch
from aether_mcp.wire import value_codec
from aether_mcp.wire.worker_protocol import WorkerUnavailable, request

MESSAGE_CAP = 2000
_EVENTS: list[dict[str, Any]] = []


class HarnessError(Exception):
    """The harness could not evaluate the rows (bad rows, a target that cannot run, no worker)."""


class UdfUnderTest:
    """Evaluates the run's target on argument rows through Spark."""

    def __init__(self, socket_path: str, token: str, context_id: str, target: str, deadline: float) -> None:
        self.socket_path = socket_path
        self.token = token
        self.context_id = context_id
        self.target = target
        self.deadline = deadline
        self.events: list[dict[str, Any]] = []

    def __call__(self, rows: Iterable[Iterable[Any]]) -> list[Any]:
        __tracebackhide__ = True
        rows = [list(row) if isinstance(row, (list, tuple)) else row for row in rows]
        if not rows:
            return []
        if self.target.startswith("canary:"):
            # A stand-in that ignores its input: a test that still passes pins nothing.
            return [value_codec.decode(json.loads(self.target.removeprefix("canary:")))] * len(rows)
        try:
            encoded = value_codec.encode(rows)
        except TypeError as exc:
            raise HarnessError(f"udf_under_test: {exc}") from None
        message = {"op": "evaluate", "token": self.token, "context_id": self.context_id, "rows": encoded}
        try:
            reply = request(self.socket_path, message, timeout_s=max(1.0, self.deadline - time.time()))
        except WorkerUnavailable as exc:
            raise HarnessError(f"udf_under_test could not reach Spark: {exc}") from None
        _EVENTS.extend(reply.get("events", []))
        if not reply.get("ok"):
            raise HarnessError(str(reply.get("message")))
        return value_codec.decode(reply["outputs"])

    def __repr__(self) -> str:
        return f"<udf_under_test target={self.target}>"


@pytest.fixture(scope="session")
def udf_under_test() -> UdfUnderTest:
    """Evaluate the target under test on a list of argument rows; returns the outputs in order."""
    return UdfUnderTest(
        socket_path=os.environ.get("AETHER_WORKER_SOCKET", ""),
        token=os.environ.get("AETHER_WORKER_TOKEN", ""),
        context_id=os.environ.get("AETHER_CONTEXT_ID", ""),
        target=os.environ["AETHER_TARGET"],
        deadline=float(os.environ.get("AETHER_DEADLINE", time.time() + 300)),
    )


class _Reporter:
    def __init__(self, report_path: Path, progress_path: Path) -> None:
        self.report_path = report_path
        self.progress_path = progress_path
        self.results: dict[str, dict[str, Any]] = {}
        self.collected = 0
        self.overridden: dict[str, str] = {}

    def progress(self, event: dict[str, Any]) -> None:
        with open(self.progress_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

    def set(self, nodeid: str, outcome: str, message: str, duration: float = 0.0) -> None:
        previous = self.results.get(nodeid)
        if previous and previous["outcome"] in ("failed", "error") and outcome == "passed":
            return
        self.results[nodeid] = {"nodeid": nodeid, "outcome": outcome, "message": _cap(message), "duration_s": round(duration, 3)}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items) -> None:
        self.collected = len(items)
        for item in items:
            definitions = getattr(item, "_fixtureinfo", None)
            fixturedefs = definitions.name2fixturedefs.get("udf_under_test") if definitions else None
            if fixturedefs and fixturedefs[-1].baseid != "":
                self.overridden[item.nodeid] = fixturedefs[-1].baseid
        self.progress({"event": "collected", "count": self.collected})

    def pytest_runtest_setup(self, item) -> None:
        if item.nodeid in self.overridden:
            raise HarnessError(
                f"udf_under_test is provided by the harness; remove the fixture of that name defined in "
                f"{self.overridden[item.nodeid]} so the test runs against the real target"
            )

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.set(report.nodeid or "<collection>", "error", str(report.longreprtext))

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.progress({"event": "start", "nodeid": nodeid})

    def pytest_runtest_logreport(self, report) -> None:
        xfail = hasattr(report, "wasxfail")
        if report.when in ("setup", "teardown") and report.failed:
            self.set(report.nodeid, "error", report.longreprtext, report.duration)
        elif report.skipped:
            reason = report.wasxfail if xfail else (report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr))
            self.set(report.nodeid, "xfailed" if xfail else "skipped", str(reason), report.duration)
        elif report.when == "call":
            outcome = ("xpassed" if xfail else "passed") if report.passed else "failed"
            self.set(report.nodeid, outcome, report.longreprtext if report.failed else "", report.duration)
        if report.when == "teardown":
            result = self.results.get(report.nodeid)
            self.progress({"event": "finished", **(result or {"nodeid": report.nodeid, "outcome": "error", "message": ""})})

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        report = {
            "exitstatus": int(exitstatus),
            "collected": self.collected,
            "tests": list(self.results.values()),
            "test_events": watch.drain(),  # what the test code itself did
            "target_events": _EVENTS[:100],  # what the worker saw the target do
        }
        partial = self.report_path.with_suffix(".partial")
        partial.write_text(json.dumps(report), encoding="utf-8")
        partial.replace(self.report_path)


def _cap(text: str) -> str:
    text = text or ""
    return text if len(text) <= MESSAGE_CAP else text[: MESSAGE_CAP - 40] + f"\n... [{len(text) - MESSAGE_CAP + 40} more characters in the log]"


def pytest_configure(config) -> None:
    tests = os.environ.get("AETHER_TESTS_DIR")
    if tests:
        watch.install([tests], candidate=False)
    report_path = os.environ.get("AETHER_REPORT_PATH")
    if report_path:
        config.pluginmanager.register(_Reporter(Path(report_path), Path(os.environ["AETHER_PROGRESS_PATH"])), "aether-reporter")
