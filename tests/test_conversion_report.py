"""report: the recommendation's wiring code, read from the job and run as a job would run it."""

import re
import subprocess
import sys
import textwrap

import pytest

from aether_mcp.tools import conversion_report, workspaces
from aether_mcp.workspace import Workspace
from conftest import EXAMPLES, VECTORIZED_CANDIDATE

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
