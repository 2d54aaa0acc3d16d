"""A sql candidate's build() in its throwaway process (aether_mcp.confined.sql_build): what comes back, and what
the build cannot do from there.

The quick tests start no Spark: the build process has no JVM, and its result is the expression as Spark Connect's
protobuf. Each attempt below is one `try` whose outcome the candidate writes into the name of a step it returns, so
the test sees that every attempt was made and how it ended.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aether_mcp.confined import sql_build

REPO = Path(__file__).resolve().parents[1]
HONEST = textwrap.dedent(
    """
    from pyspark.sql import functions as F

    TARGET = "sql"


    def build(weight, express):
        fee = F.when(weight < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (weight - 2.0) * 1.5)
        return F.when(express, fee * 2).otherwise(fee)
    """
)


def built(source: str, tmp_path: Path, args=("weight", "express")) -> dict:
    filename = tmp_path / "candidate" / "c.py"
    filename.parent.mkdir(exist_ok=True)
    filename.write_text(source)
    return sql_build.build_in_child(source, str(filename), "c", list(args))


def test_an_honest_build_comes_back_as_protobuf_expressions(tmp_path):
    result = built(HONEST, tmp_path)
    assert result["ok"], result
    assert [name for name, _ in result["steps"]] == [None]
    assert result["events"] == []
    steps = built(HONEST.replace("return F.when(express, fee * 2).otherwise(fee)", "return [('fee', fee), ('out', F.when(express, F.col('fee') * 2).otherwise(F.col('fee')))]"), tmp_path)
    assert steps["ok"] and [name for name, _ in steps["steps"]] == ["fee", "out"], steps


def test_failures_say_where_they_happened(tmp_path):
    cases = {
        "import": "TARGET = 'sql'\nraise RuntimeError('half-imported')\n",
        "build": "TARGET = 'sql'\n\ndef build(weight, express):\n    raise ValueError('no column')\n",
        "result": "TARGET = 'sql'\n\ndef build(weight, express):\n    return 42\n",
    }
    for stage, source in cases.items():
        result = built(source, tmp_path)
        assert not result["ok"] and result["stage"] == stage, (stage, result)
    assert "half-imported" in built(cases["import"], tmp_path)["message"]


def test_the_build_reaches_no_session_no_file_no_network_and_starts_no_thread(tmp_path):
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(1.0)
    port = listener.getsockname()[1]
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "written.txt"
    source = textwrap.dedent(
        f"""
        import calendar as _reach
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        TARGET = "sql"


        def _attempt(action):
            try:
                return repr(action())
            except BaseException as exc:
                return exc.__class__.__name__


        def build(weight, express):
            outcomes = [
                ("session", _attempt(lambda: SparkSession.getActiveSession())),
                ("write", _attempt(lambda: open({str(target)!r}, "w").write("x"))),
                ("udp", _attempt(lambda: _reach.sys.modules["socket"].socket(2, 2).sendto(b"batch", ("127.0.0.1", {port})))),
                ("thread", _attempt(lambda: _reach.sys.modules["threading"].Thread(target=lambda: None).start())),
            ]
            return [(f"{{name}}={{outcome}}", F.lit(1)) for name, outcome in outcomes] + [("out", weight)]
        """
    )
    result = built(source, tmp_path)
    assert result["ok"], result
    outcomes = dict(name.split("=", 1) for name, _ in result["steps"][:-1])
    assert outcomes["session"] == "None"  # no Spark session exists where the build runs
    assert outcomes["write"] != "1" and not target.exists(), outcomes
    assert outcomes["thread"] != "None", outcomes
    try:
        arrived = listener.recvfrom(64)
    except TimeoutError:
        arrived = None
    finally:
        listener.close()
    assert arrived is None, f"a datagram from the build reached the host: {arrived}"
    refused = {event["event"] for event in result["events"] if event["refused"]}
    assert "open" in refused and any(event.startswith("socket") for event in refused), result["events"]
    assert all(event["file"].endswith("c.py") for event in result["events"]), result["events"]


def test_a_build_that_never_returns_is_ended(tmp_path):
    source = "TARGET = 'sql'\n\ndef build(weight, express):\n    while True:\n        pass\n"
    filename = tmp_path / "c.py"
    filename.write_text(source)
    with pytest.raises(sql_build.BuildFailed, match="took more than 3s"):
        sql_build.build_in_child(source, str(filename), "c", ["weight", "express"], timeout_s=3)


@pytest.mark.slow
def test_every_honest_sql_candidate_is_judged_on_the_expression_its_job_builds(tmp_path):
    # The job runs build() with PySpark's classic Columns; the judge gets it from Spark Connect's client in the
    # build process. Both analyse to the same plan (expression ids aside) for every honest sql candidate we ship.
    candidates = sorted(
        [p for p in (REPO / "tests" / "red_team" / "candidates").glob("*/honest_*.py") if 'TARGET = "sql"' in p.read_text()]
        + [p for p in (REPO / "examples").glob("*/candidates/*.py") if "TARGET = 'sql'" in p.read_text() or 'TARGET = "sql"' in p.read_text()]
    )
    assert len(candidates) >= 8, candidates
    script = tmp_path / "agree.py"
    script.write_text(AGREEMENT)
    ended = subprocess.run([sys.executable, str(script), *map(str, candidates)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert ended.returncode == 0, ended.stderr[-3000:]
    report = json.loads(ended.stdout.strip().splitlines()[-1])
    assert sorted(report) == sorted(map(str, candidates))
    differing = {path: plans for path, plans in report.items() if plans[0] != plans[1]}
    assert not differing, differing


# Types of each UDF's arguments, as its job declares them.
TYPES = {
    "weight": "double", "express": "boolean", "age": "int", "amount": "double", "tier": "string", "numerator": "double",
    "denominator": "double", "score": "int", "days_late": "int", "n": "int", "x": "double", "raw": "string",
}
AGREEMENT = textwrap.dedent(
    f"""
    import importlib.util, inspect, json, re, sys
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from aether_mcp.confined import sql_build
    from aether_mcp.confined.arrow_batches import ROW_ID
    from aether_mcp.evaluation.target_evaluation import apply_build

    TYPES = {TYPES!r}
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()

    def analysed(built, params):
        frame = spark.createDataFrame([], ", ".join([f"`{{ROW_ID}}` bigint"] + [f"`{{p}}` {{TYPES[p]}}" for p in params]))
        plan = apply_build(frame, built, "c")._jdf.queryExecution().analyzed().toString()
        return re.sub(r"#\\d+L?", "#", plan)

    report = {{}}
    for path in sys.argv[1:]:
        source = open(path).read()
        spec = importlib.util.spec_from_file_location("candidate", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        params = [p.name for p in inspect.signature(module.build).parameters.values()]
        classic = analysed(module.build(*[F.col(f"`{{p}}`") for p in params]), params)
        result = sql_build.build_in_child(source, path, "c", params)
        judged = analysed(sql_build.to_columns(spark, result["steps"]), params) if result["ok"] else result["message"]
        report[path] = [classic, judged]
    print(json.dumps(report))
    """
)


def test_the_build_as_the_job_does_it_blames_the_candidate_only_once_its_session_started():
    import threading

    from aether_mcp.tools.cheat_audit import _AsInTheJob

    def checked(outcome: dict, judged: str | None = "plan A") -> tuple[list, str | None]:
        check = object.__new__(_AsInTheJob)  # the outcome as the confined child left it; nothing is started here
        check.file, check.cancel, check.outcome = "candidate/c.py", None, outcome
        check.thread = threading.Thread(target=lambda: None)
        check.thread.start()
        return [(f.rule, f.evidence) for f in check.findings(judged)], check.problem

    # the child's SparkSession never started: no finding against the candidate, a reason that says to run it again
    findings, problem = checked({"raw": None, "why": "exit 1: java.lang.OutOfMemoryError", "started": False, "log": "/x"})
    assert findings == [] and "its SparkSession did not start (exit 1: java.lang.OutOfMemoryError" in problem and problem.endswith("run audit_candidate again")
    # it started, then the candidate's import or build never returned: the job would not run either
    findings, problem = checked({"raw": None, "why": "it took more than 180s", "started": True, "log": "/x"})
    assert problem is None and findings == [("fails_in_job", "importing it and calling build(*cols) as its job does did not finish (it took more than 180s)")]
    findings, _ = checked({"raw": {"built": False, "error": "AssertionError: "}, "started": True})
    assert [rule for rule, _ in findings] == ["fails_in_job"] and "AssertionError" in findings[0][1]
    findings, _ = checked({"raw": {"built": True, "plan": "plan B"}, "started": True})
    assert [rule for rule, _ in findings] == ["watch_dependent"] and "plan B" in findings[0][1] and "plan A" in findings[0][1]
    assert checked({"raw": {"built": True, "plan": "plan A"}, "started": True}) == ([], None)


def test_a_confined_worker_never_runs_a_build_on_its_own_loopback(tmp_path, monkeypatch):
    # `unshare --net` failing inside a confined worker cannot be brought about here: the probe's cached answer is set
    monkeypatch.setattr(sql_build, "_network_prefix", [None])
    monkeypatch.setattr(sql_build, "_CONFINED", True)
    with pytest.raises(sql_build.BuildFailed, match=r"could not get a network namespace of its own .* so no build ran"):
        sql_build.build_in_child(HONEST, str(tmp_path / "c.py"), "c", ["weight", "express"])
    # unconfined (no namespaces at all, which the worker's own confinement status already says), it runs
    monkeypatch.setattr(sql_build, "_CONFINED", False)
    assert sql_build.build_in_child(HONEST, str(tmp_path / "c.py"), "c", ["weight", "express"])["ok"] is True
