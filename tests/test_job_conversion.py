"""apply_conversion: the job with its UDF replaced by a verified candidate, next to the original.

The converted job must parse, import without starting Spark, hold no Python UDF for the function,
and transform sample data exactly as the original job does (both jobs run for real here).
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SHIPPING_CASES, SHIPPING_JOB, SQL_CANDIDATE, VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.tools import workspaces
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import audit_candidate
from aether_mcp.tools.job_conversion import MARKER, apply_conversion, no_udf_left
from aether_mcp.workspace import Workspace

pytestmark = pytest.mark.slow
# the shipping job in a form that runs as a script: a DDL string in @udf needs a SparkContext at import in PySpark 4
RUNNABLE_JOB = SHIPPING_JOB.replace('@udf("double")', "@udf(returnType=DoubleType())").replace(
    "from pyspark.sql.functions import udf\n", "from pyspark.sql.functions import udf\nfrom pyspark.sql.types import DoubleType\n"
)


def _verify(root, workers, workspace: str, name: str) -> None:
    assert byte_compare(root, workers, workspace, name, hidden_rows=1000).equal
    assert audit_candidate(root, workers, workspace, name, 1000).verdict.startswith("PASS")


def _run_job(job: Path, data: Path) -> pa.Table:
    """The job as a user runs it (`python job.py DATA`), in its own folder; its output table."""
    out = Path(str(data) + "_out")
    if out.exists():
        import shutil

        shutil.rmtree(out)
    # the job's folder on the executors' path, as `spark-submit --py-files` puts the candidate module there
    # (the quick compiler only: a short job whose output, not its speed, is compared)
    env = {**os.environ, "PYTHONPATH": str(job.parent), "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_SUBMIT_ARGS": "--driver-java-options -XX:TieredStopAtLevel=1 pyspark-shell"}
    ran = subprocess.run([sys.executable, job.name, str(data)], cwd=job.parent, capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return pq.read_table(out).sort_by("id")


def _sample(path: Path) -> None:
    rng = np.random.default_rng(11)
    weight = rng.uniform(0.05, 30.0, 500)
    weight[:5] = [2.0, 1.999999, float("nan"), 0.1, 30.0]
    missing = rng.random(500) < 0.05
    pq.write_table(pa.table({"id": np.arange(500), "weight": pa.array(weight, mask=missing), "express": pa.array(rng.random(500) < 0.5)}), path)


def _same_bits(original: pa.Table, converted: pa.Table) -> None:
    assert original.schema == converted.schema and original.num_rows == converted.num_rows
    a, b = original.column("fee"), converted.column("fee")
    assert a.is_null().to_pylist() == b.is_null().to_pylist()
    assert np.array_equal(a.to_numpy(zero_copy_only=False).view(np.int64), b.to_numpy(zero_copy_only=False).view(np.int64))  # NaN and every bit alike


@pytest.mark.parametrize("candidate, source", [("fee_sql", SQL_CANDIDATE), ("fee_vectorized", VECTORIZED_CANDIDATE)])
def test_the_converted_job_equals_the_original_on_sample_data(root, workers, candidate, source):
    assert RUNNABLE_JOB != SHIPPING_JOB
    job = root.path / "jobs" / "shipping.py"
    job.write_text(RUNNABLE_JOB)
    workspace = workspaces.init_workspace(root, "jobs/shipping.py", "shipping_fee").workspace
    (Path(workspace) / "tests" / "cases.py").write_text(SHIPPING_CASES)
    (Path(workspace) / "candidate" / f"{candidate}.py").write_text(source)
    before = job.read_bytes()
    with pytest.raises(ToolError, match="not verified"):
        apply_conversion(root, workspace, candidate)
    _verify(root, workers, workspace, candidate)
    result = apply_conversion(root, workspace, candidate)
    assert job.read_bytes() == before  # the user's file is never edited
    converted = Path(result.converted_path)
    assert converted == root.path / "jobs" / "shipping.converted.py" and Path(result.module_path) == root.path / "jobs" / f"shipping_fee_{candidate}.py"
    assert result.checks == {"parses": "pass", "no_udf_left": "pass", "imports": "pass"}
    text = converted.read_text()
    assert text.startswith(MARKER) and no_udf_left(text, Workspace.open(root, workspace).config.udf) == "pass"
    assert "@udf" not in text and Path(result.module_path).read_text().endswith(source)
    diff = Path(result.diff_path).read_text()
    assert diff.startswith("--- jobs/shipping.py\n+++ jobs/shipping.converted.py") and "-@udf(returnType=DoubleType())" in diff
    if candidate == "fee_sql":
        assert result.kind == "sql" and result.call_sites_rewritten and "with_shipping_fee(spark.read.parquet(path), 'fee', 'weight', 'express')" in text
    else:
        assert result.kind == "vectorized" and 'shipping_fee = spark_arrow_udf(_shipping_fee_evaluate, "double")' in text and "--py-files" in result.adopt
    data = root.path / "parcels.parquet"
    _sample(data)
    _same_bits(_run_job(job, data), _run_job(converted, data))
    # applying again replaces its own files; a file of the user's is never overwritten
    again = apply_conversion(root, workspace, candidate)
    assert again.converted_path == result.converted_path
    converted.write_text("# my own edits\n")
    with pytest.raises(ToolError, match="was not written by apply_conversion"):
        apply_conversion(root, workspace, candidate)
    assert converted.read_text() == "# my own edits\n"


REGISTERED_JOB = textwrap.dedent(
    '''
    """A job that registers its UDF for SQL text."""
    import sys

    from pyspark.sql import SparkSession

    spark = None


    def shipping_fee(weight: float, express: bool) -> float:
        if weight is None:
            return None
        fee = 4.99 if weight < 2.0 else 4.99 + (weight - 2.0) * 1.5
        return fee * 2 if express else fee


    def main(path):
        spark = SparkSession.builder.getOrCreate()
        spark.udf.register("shipping_fee", shipping_fee, "double")
        spark.read.parquet(path).createOrReplaceTempView("parcels")
        spark.sql("SELECT id, weight, express, shipping_fee(weight, express) AS fee FROM parcels").write.parquet(path + "_out")


    if __name__ == "__main__":
        main(sys.argv[1])
    '''
)
REGISTERED_VECTORIZED = VECTORIZED_CANDIDATE.replace('    if (w <= 0).any():\n        raise ValueError("weight must be positive")\n', "")


def test_a_registered_udf_keeps_its_sql_name_as_an_arrow_udf_and_refuses_a_sql_candidate(root, workers):
    assert "raise" not in REGISTERED_VECTORIZED
    (root.path / "jobs" / "registered.py").write_text(REGISTERED_JOB)
    ws = workspaces.init_workspace(root, "jobs/registered.py", "shipping_fee").workspace
    (Path(ws) / "candidate" / "fee_sql.py").write_text(SQL_CANDIDATE.replace("F.when(weight <= 0, F.raise_error(F.lit(\"weight must be positive\"))).otherwise(fee)", "fee"))
    (Path(ws) / "candidate" / "fee_vec.py").write_text(REGISTERED_VECTORIZED)
    for name in ("fee_sql", "fee_vec"):
        _verify(root, workers, ws, name)
    with pytest.raises(ToolError, match="SQL text cannot call"):
        apply_conversion(root, ws, "fee_sql")
    assert not (root.path / "jobs" / "registered.converted.py").exists()
    result = apply_conversion(root, ws, "fee_vec")
    text = Path(result.converted_path).read_text()
    assert "spark.udf.register('shipping_fee', shipping_fee)" in text and "spark_arrow_udf(_shipping_fee_evaluate" in text
    data = root.path / "parcels.parquet"
    _sample(data)
    _same_bits(_run_job(root.path / "jobs" / "registered.py", data), _run_job(Path(result.converted_path), data))


def test_a_job_that_starts_spark_at_import_is_reported_and_nothing_is_written(root, workers):
    eager = (root.path / "jobs" / "shipping.py").read_text().replace("def main(path):\n", "SPARK = SparkSession.builder.getOrCreate()\n\n\ndef main(path):\n")
    (root.path / "jobs" / "eager.py").write_text(eager)
    ws = workspaces.init_workspace(root, "jobs/eager.py", "shipping_fee").workspace
    (Path(ws) / "candidate" / "fee.py").write_text(SQL_CANDIDATE)
    _verify(root, workers, ws, "fee")
    with pytest.raises(ToolError, match="importing it starts Spark"):
        apply_conversion(root, ws, "fee")
    assert not (root.path / "jobs" / "eager.converted.py").exists() and not (root.path / "jobs" / "shipping_fee_fee.py").exists()
