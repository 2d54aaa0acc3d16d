"""report: the recommendation's wiring code, read from the job and run as a job would run it."""

import re
import subprocess
import sys
import textwrap

import pytest
from conftest import EXAMPLES, VECTORIZED_CANDIDATE

from aether_mcp.tools import conversion_report, workspaces
from aether_mcp.workspace import Workspace

STEPPED_SQL = textwrap.dedent(
    '''
    from pyspark.sql import functions as F

    TARGET = "sql"


    def build(weight, express):
        fee = F.when(weight < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (weight - 2.0) * 1.5)
        return [("_fee", fee), ("_out", F.when(weight.isNull(), F.lit(None).cast("double")).when(express, F.col("_fee") * 2).otherwise(F.col("_fee")))]
    '''
)


def _wiring(root, workspace: str, name: str, kind: str) -> str:
    opened = Workspace.open(root, workspace)
    return conversion_report.wiring(opened, name, kind, conversion_report._call_sites(root, opened), [])


def test_sql_wiring_rewrites_each_with_column_call_of_the_job(root, workspace):
    text = _wiring(root, workspace, "fast", "sql")
    assert "spark.read.parquet(path).withColumn('fee', shipping_fee('weight', 'express')).write.parquet(path + '_out')" in text
    assert "with_shipping_fee(spark.read.parquet(path), 'fee', 'weight', 'express').write.parquet(path + '_out')" in text
    assert "Copy `candidate/fast.py` next to the job" in text and "from fast import build" in text and "jobs/shipping.py:11" in text


def test_sql_wiring_follows_a_multi_line_call_in_an_example_job(tmp_path):
    import shutil

    from aether_mcp.path_guard import SandboxRoot

    shutil.copytree(EXAMPLES / "loyalty_pricing", tmp_path / "jobs" / "loyalty_pricing")
    root = SandboxRoot(str(tmp_path))
    created = workspaces.init_workspace(root, "jobs/loyalty_pricing/job.py", "loyalty_discount", arg_types={"age": "int"})
    text = _wiring(root, created.workspace, "discount_sql", "sql")
    assert "priced = with_loyalty_discount(orders, 'discounted_amount', F.col('age'), F.col('amount'), F.col('tier'))" in text


def test_vectorized_wiring_replaces_the_definition_and_keeps_call_sites(root, workspace):
    text = _wiring(root, workspace, "vec", "vectorized")
    assert 'shipping_fee = spark_arrow_udf(evaluate, "double")' in text and "Every call site stays as it is (line 23)" in text
    assert 'spark.sparkContext.addPyFile("vec.py")' in text and "from vec import evaluate" in text


@pytest.mark.slow
def test_the_recommended_wiring_runs_in_a_spark_job(root, workspace, tmp_path):
    """The code blocks of both recommendations, pasted into a job, give the original's results."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "steps.py").write_text(STEPPED_SQL)
    (job_dir / "vec.py").write_text(VECTORIZED_CANDIDATE)
    blocks = {}
    for name, kind in (("steps", "sql"), ("vec", "vectorized")):
        blocks[kind] = re.findall(r"```python\n(.*?)```", _wiring(root, workspace, name, kind), re.S)
    sql_helper, rewritten = blocks["sql"][0], blocks["sql"][2]
    assert rewritten.startswith("with_shipping_fee(spark.read.parquet(path), 'fee', 'weight', 'express')")
    script = "\n".join(
        [
            "import sys",
            f"sys.path.insert(0, {str(job_dir)!r})",
            "from aether_mcp.evaluation.spark_session import create_session",
            "spark = create_session('local[1]', {'spark.sql.session.timeZone': 'UTC'}, 'wiring')",
            "frame = spark.createDataFrame([(1.0, False), (2.0, False), (4.0, True), (None, True)], 'weight double, express boolean')",
            sql_helper,
            "sql = with_shipping_fee(frame, 'fee', 'weight', 'express')",
            f"spark.sparkContext.addPyFile({str(job_dir / 'vec.py')!r})  # as the wiring text says",
            blocks["vectorized"][0],
            "vectorized = frame.withColumn('fee', shipping_fee('weight', 'express'))",
            "for result in (sql, vectorized):",
            "    print(result.columns, [row['fee'] for row in result.collect()])",
        ]
    )
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = [line for line in completed.stdout.splitlines() if line.startswith("[")]
    expected = "['weight', 'express', 'fee'] [4.99, 4.99, 15.98, None]"
    assert lines == [expected, expected]


# --- which results the report believes, and what it recommends -------------------------------------
# Records are written as the tools write them (candidate_results, benchmark.json), so these pin the
# report's reading of them without running Spark.


def _verified(opened: Workspace, name: str, rows: int = 20_000) -> None:
    from aether_mcp.workspace import candidate_results

    candidate_results.record(opened, "compares", name, {"equal": True, "rows_compared": rows, "evidence": "", "mismatched": 0, "result_path": f"/runs/{name}/compare.json"})
    candidate_results.record(opened, "audits", name, {"verdict": "PASS", "blocking": 0, "comparison_equal": True, "rows_compared": rows, "result_path": f"/runs/{name}/audit.json"})


def _benchmarked(opened: Workspace, name: str, speedup: float, interval: list[float], run: str, environment: dict | None = None) -> None:
    import hashlib
    import json

    from aether_mcp.tools.benchmarking import BENCH_DIR

    digest = hashlib.sha256((opened.path / "candidate" / f"{name}.py").read_bytes()).hexdigest()
    folder = opened.state_dir / BENCH_DIR / run
    folder.mkdir(parents=True)
    record = {"candidate": name, "candidate_digest": digest, "rows": 100_000, "repeats": 5, "modes": [], "speedup": speedup, "speedup_ci": interval, "environment": environment or {}}
    (folder / "benchmark.json").write_text(json.dumps(record))


def _two_candidates(root, workspace) -> Workspace:
    opened = Workspace.open(root, workspace)
    (opened.path / "candidate" / "slow.py").write_text(STEPPED_SQL)
    (opened.path / "candidate" / "slower.py").write_text(STEPPED_SQL + "\n# another spelling\n")
    _verified(opened, "slow")
    _verified(opened, "slower")
    return opened


def test_report_says_ship_none_when_every_verified_candidate_is_slower(root, workspace):
    opened = _two_candidates(root, workspace)
    _benchmarked(opened, "slow", 0.84, [0.80, 0.88], "20261202T000001-a")
    _benchmarked(opened, "slower", 0.67, [0.61, 0.72], "20261202T000002-b")
    data = conversion_report.collect(root, opened)
    assert data["recommendation"]["candidate"] is None and data["recommendation"]["wiring"] is None
    summary = data["recommendation"]["summary"]
    assert summary.startswith("ship none: keep the UDF.")
    assert "slow 0.84x the original's speed in run_benchmark (95% CI 0.80-0.88)" in summary and "slower 0.67x" in summary


def test_report_ships_none_when_the_interval_reaches_below_one(root, workspace):
    opened = _two_candidates(root, workspace)
    _benchmarked(opened, "slow", 1.08, [0.93, 1.21], "20261202T000001-a")
    data = conversion_report.collect(root, opened)
    assert data["recommendation"]["candidate"] is None
    assert "slower not benchmarked on its current file" in data["recommendation"]["summary"]


def test_report_ships_the_fastest_verified_candidate(root, workspace):
    opened = _two_candidates(root, workspace)
    _benchmarked(opened, "slow", 2.18, [2.05, 2.31], "20261202T000001-a")
    _benchmarked(opened, "slower", 1.40, [1.31, 1.52], "20261202T000002-b", {"jvm_compiler": "quick"})
    recommendation = conversion_report.collect(root, opened)["recommendation"]
    assert recommendation["candidate"] == "slow" and recommendation["speedup"] == 2.18
    assert "The other verified candidates: slower 1.40x" in recommendation["summary"] and "from slow import build" in recommendation["wiring"]
    # a speedup timed on the quick compiler says so wherever it is quoted; one timed as a long job runs needs no note
    assert "slower 1.40x the original's speed in run_benchmark (95% CI 1.31-1.52) (timed on the quick JVM compiler" in recommendation["summary"]
    assert "2.18x the original's speed in run_benchmark (95% CI 2.05-2.31). The other" in recommendation["summary"]
    assert "| 20261202T000002-b | slower | cpu |" in (markdown := conversion_report.render_markdown(conversion_report.collect(root, opened))) and "(quick JVM compiler) |" in markdown


def test_a_candidate_restored_byte_for_byte_is_not_stale(root, workspace):
    from aether_mcp.workspace import candidate_results

    opened = Workspace.open(root, workspace)
    path = opened.path / "candidate" / "fee.py"
    path.write_text(STEPPED_SQL)
    _verified(opened, "fee")
    path.write_text(STEPPED_SQL.replace("1.5", "1.6"))  # an optimization attempt, compared and found wrong
    candidate_results.record(opened, "compares", "fee", {"equal": False, "rows_compared": 900, "evidence": "", "mismatched": 40, "result_path": "/runs/attempt.json"})
    assert workspaces.workspace_status(root, workspace).last_compares["fee"].mismatched == 40
    path.write_text(STEPPED_SQL)  # restored
    status = workspaces.workspace_status(root, workspace)
    compare, audit = status.last_compares["fee"], status.last_audits["fee"]
    assert compare.equal is True and not compare.candidate_changed_since and audit.verdict == "PASS" and not audit.candidate_changed_since
    assert next(g for g in status.gates if g.name == "candidate_equal").status == "pass"
    path.write_text(STEPPED_SQL + "\n")  # one byte more: no result judged these bytes
    assert workspaces.workspace_status(root, workspace).last_compares["fee"].candidate_changed_since


def test_records_edited_by_hand_or_forged_are_ignored_and_said_so(root, workspace):
    import json

    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp.tools.job_conversion import apply_conversion
    from aether_mcp.workspace import candidate_results

    opened = Workspace.open(root, workspace)
    (opened.path / "candidate" / "fee.py").write_text(STEPPED_SQL)
    candidate_results.record(opened, "compares", "fee", {"equal": False, "rows_compared": 900, "evidence": "", "mismatched": 40, "result_path": "/runs/a.json"})
    candidate_results.record(opened, "audits", "fee", {"verdict": "FAIL", "blocking": 2, "comparison_equal": False, "rows_compared": 900, "result_path": "/runs/b.json"})
    # one attempt per kind of forgery: a verdict edited in place, and a new entry with a made-up signature
    compares = opened.state_dir / "runs" / "compares.json"
    edited = json.loads(compares.read_text())
    edited["fee"][0].update(equal=True, mismatched=0, rows_compared=20_000)
    compares.write_text(json.dumps(edited))
    audits = opened.state_dir / "runs" / "audits.json"
    forged = json.loads(audits.read_text())
    forged["fee"].append({**forged["fee"][0], "verdict": "PASS", "blocking": 0, "comparison_equal": True, "signature": "0" * 64})
    audits.write_text(json.dumps(forged))
    status = workspaces.workspace_status(root, workspace)
    assert "fee" not in status.last_compares and status.last_audits["fee"].verdict == "FAIL"
    assert next(g for g in status.gates if g.name == "candidate_equal").status != "pass"
    assert any("1 byte_compare record(s) of fee ignored" in line for line in status.records_ignored)
    assert any("1 audit_candidate record(s) of fee ignored" in line for line in status.records_ignored)
    with pytest.raises(ToolError, match="is not verified on its current file"):
        apply_conversion(root, workspace, "fee")
    assert conversion_report.collect(root, opened)["recommendation"]["candidate"] is None


def test_report_shows_the_strongest_comparison_on_the_current_content(root, workspace):
    from aether_mcp.workspace import candidate_results

    opened = Workspace.open(root, workspace)
    (opened.path / "candidate" / "fee.py").write_text(STEPPED_SQL)
    _verified(opened, "fee", rows=100_000)
    # the benchmark's own small pre-check comes later, on the same bytes
    candidate_results.record(opened, "compares", "fee", {"equal": True, "rows_compared": 1604, "evidence": "", "mismatched": 0, "result_path": "/runs/precheck.json"})
    markdown = conversion_report.render_markdown(conversion_report.collect(root, opened))
    assert "equal on 100000 rows" in markdown and "1604" not in markdown


def test_a_mismatch_outweighs_later_equal_runs_on_the_same_content(root, workspace):
    from aether_mcp.workspace import candidate_results

    opened = Workspace.open(root, workspace)
    (opened.path / "candidate" / "fee.py").write_text(STEPPED_SQL)
    candidate_results.record(opened, "compares", "fee", {"equal": False, "rows_compared": 20_000, "evidence": "", "mismatched": 1, "result_path": "/runs/found.json"})
    _verified(opened, "fee", rows=100_000)  # a later sample that missed the one wrong row proves nothing
    status = workspaces.workspace_status(root, workspace)
    assert status.last_compares["fee"].equal is False and not status.last_compares["fee"].candidate_changed_since
    assert conversion_report.collect(root, opened)["candidates"]["fee"]["verified"] is False
    # recording a deviation changes what is judged: the old mismatch no longer describes it
    deviations_file = opened.path / "deviations" / "fee.json"
    deviations_file.parent.mkdir(exist_ok=True)
    deviations_file.write_text("[]")
    assert workspaces.workspace_status(root, workspace).last_compares["fee"].candidate_changed_since
