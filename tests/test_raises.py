"""Failures are behaviour: where the original raises the candidate must fail too, and no verdict without evidence."""

import textwrap

import pytest
from conftest import SQL_CANDIDATE, VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp import bench_data
from aether_mcp.judge.compare import RAISE_KIND
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import deviation_records, files, workspaces
from aether_mcp.tools.benchmarking import run_benchmark
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import audit_candidate
from aether_mcp.workspace import derivation

pytestmark = pytest.mark.slow


def sql(signature: str, body: str) -> str:
    return f"from pyspark.sql import functions as F\n\nTARGET = 'sql'\n\n\ndef build({signature}):\n    return {body}\n"


def job_root(tmp_path, name: str, text: str) -> SandboxRoot:
    (tmp_path / "jobs").mkdir(parents=True)
    (tmp_path / "jobs" / name).write_text(text)
    return SandboxRoot(tmp_path)


# The shipping candidate that hides the crash: null where the original raises on a non-positive weight.
NULL_FOR_RAISE = VECTORIZED_CANDIDATE.replace(
    '    if (w <= 0).any():\n        raise ValueError("weight must be positive")\n',
    "    missing = missing | (w <= 0)\n",
)

STEPS_SQL = textwrap.dedent(
    '''
    from pyspark.sql import functions as F

    TARGET = "sql"


    def build(weight, express):
        return [
            ("checked", F.when(weight <= 0, F.raise_error(F.lit("weight must be positive"))).otherwise(weight)),
            ("fee", F.when(F.col("checked") < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (F.col("checked") - 2.0) * 1.5)),
            ("result", F.when(express, F.col("fee") * 2).otherwise(F.col("fee"))),
        ]
    '''
)

RAISING_JOB = textwrap.dedent(
    '''
    import pandas as pd
    from pyspark.sql.functions import pandas_udf, udf


    @udf("double")
    def per_nothing(x: float) -> float:
        return float(x) / 0.0  # raises on every row: TypeError on null, ZeroDivisionError otherwise


    @pandas_udf("double")
    def checked_scale(x: pd.Series) -> pd.Series:
        if (x < 0).any():
            raise ValueError("negative values are not allowed")
        return x * 2.0
    '''
)


@pytest.fixture
def raising_root(tmp_path) -> SandboxRoot:
    return job_root(tmp_path, "raising.py", RAISING_JOB)


def test_returning_where_the_original_raises_is_a_mismatch_until_a_deviation_admits_it(root, workspace, workers):
    files.write_file(root, workspace, "candidate/hides_crashes.py", NULL_FOR_RAISE)
    result = byte_compare(root, workers, workspace, "hides_crashes", hidden_rows=2000)
    assert result.equal is False
    hidden = {s.source: s for s in result.sources}["hidden"]
    assert hidden.candidate_returned_where_original_raised == hidden.mismatched > 0
    assert {s.source: s for s in result.sources}["tests"].mismatched == 1  # the -1.0 case
    raise_mismatches = [m for m in result.mismatches if m.kind == RAISE_KIND]
    assert raise_mismatches and raise_mismatches[0].expected.startswith("raised ValueError") and raise_mismatches[0].actual == "None"
    assert result.original_raised.candidate_returned == result.original_raised.count > 0
    assert result.original_raised.examples[0].candidate == "None"

    deviation_records.record_deviation(
        root, workspace, "hides_crashes", "null where the original raises on a non-positive weight",
        "the pipeline filters null fees downstream instead of failing the job", returns_where_original_raises=True,
    )
    admitted = byte_compare(root, workers, workspace, "hides_crashes", hidden_rows=2000)
    assert admitted.equal is True, admitted.mismatches[:3]
    assert admitted.original_raised.allowed_by_deviation == admitted.original_raised.count > 0
    assert any("where the original raises, the candidate may return" in d for d in admitted.policy.declared_deviations)


def test_a_deviation_for_some_rows_leaves_the_others_held_to_raising(root, workspace, workers):
    files.write_file(root, workspace, "candidate/hides_crashes.py", NULL_FOR_RAISE)
    deviation_records.record_deviation(
        root, workspace, "hides_crashes", "null for a zero weight only", "zero-weight parcels are vouchers, priced elsewhere",
        applies_to="weight == 0", returns_where_original_raises=True,
    )
    result = byte_compare(root, workers, workspace, "hides_crashes", hidden_rows=2000)
    assert result.equal is False
    assert all(m.args[0] != "0.0" for m in result.mismatches if m.kind == RAISE_KIND)


@pytest.mark.parametrize("name, source", [("fee_sql", SQL_CANDIDATE), ("fee_steps", STEPS_SQL), ("fee_vectorized", VECTORIZED_CANDIDATE)])
def test_candidates_that_fail_where_the_original_raises_are_equal(root, workspace, workers, name, source):
    files.write_file(root, workspace, f"candidate/{name}.py", source)
    result = byte_compare(root, workers, workspace, name, hidden_rows=2000)
    assert result.equal is True, result.mismatches[:3]
    assert result.original_raised.count > 0 and result.original_raised.candidate_raised == result.original_raised.count
    assert result.evidence.enough and result.evidence.hidden_rows_compared >= 1000
    shown = result.original_raised.examples[0]
    assert shown.original_raised.startswith("ValueError") and shown.candidate.startswith("raised ")


def test_too_few_returning_rows_are_topped_up_where_the_original_returns(root, workspace, workers):
    # the shipping UDF raises on every non-positive weight: about half of the generated rows
    files.write_file(root, workspace, "candidate/fee_vectorized.py", VECTORIZED_CANDIDATE)
    result = byte_compare(root, workers, workspace, "fee_vectorized", hidden_rows=1000)
    assert result.equal is True
    evidence = result.evidence
    assert evidence.required_hidden_rows == 1000 and evidence.hidden_rows_compared >= 1000
    assert evidence.extra_rows_drawn > 0 and any(line.startswith("weight negative") for line in evidence.learned), evidence
    assert evidence.hidden_rows_generated == 1000 + evidence.extra_rows_drawn


def test_an_original_that_raises_everywhere_gives_no_verdict_and_no_pass(raising_root, workers):
    ws = workspaces.init_workspace(raising_root, "jobs/raising.py", "per_nothing").workspace
    files.write_file(raising_root, ws, "candidate/nulls.py", sql("x", "F.raise_error(F.lit('no')).cast('double')"))
    result = byte_compare(raising_root, workers, ws, "nulls", hidden_rows=500)
    assert result.equal is None and result.rows_compared == 0
    assert result.evidence.note.startswith(f"no evidence: the original raised on {result.evidence.hidden_rows_generated} of {result.evidence.hidden_rows_generated} hidden rows")
    assert result.original_raised.examples[0].original_raised.startswith(("ZeroDivisionError", "TypeError"))
    # small sizes: hides_failures comes from the comparison's raise matching, which any size shows
    audit = audit_candidate(raising_root, workers, ws, "nulls", hidden_rows_count=1000, watched_rows=(100, 500))
    assert audit.verdict == "FAIL" and any(reason.startswith("no verdict from byte_compare: no evidence") for reason in audit.reasons)


def test_a_pandas_original_with_a_raising_row_in_every_batch_keeps_every_other_row(raising_root, workers):
    # about half the generated values are negative, so every batch of the original fails
    ws = workspaces.init_workspace(raising_root, "jobs/raising.py", "checked_scale", arg_types={"x": "double"}).workspace
    files.write_file(raising_root, ws, "tests/cases.py", "CASES = [{'args': [-1.0], 'raises': 'ValueError', 'why': 'negative'}, {'args': [2.5], 'expected': 5.0, 'why': 'doubles'}]\n")
    candidate = (  # the original gets NaN for null and returns null for NaN (pandas' NaN is a missing value)
        "import numpy as np\nimport pandas as pd\n\nTARGET = 'vectorized'\n\n\ndef evaluate(x):\n"
        "    values = x.to_numpy(dtype='float64', na_value=np.nan)\n"
        "    if (values < 0).any():\n        raise ValueError('negative')\n"
        "    return pd.Series(pd.arrays.FloatingArray(values * 2.0, np.isnan(values)))\n"
    )
    files.write_file(raising_root, ws, "candidate/scale.py", candidate)
    result = byte_compare(raising_root, workers, ws, "scale", hidden_rows=2000)
    assert result.equal is True, (result.mismatches[:3], result.evidence)
    examples = result.original_raised.examples
    assert examples and all(float(e.args[0]) < 0 and e.original_raised.startswith("ValueError") for e in examples), examples
    assert result.evidence.hidden_rows_compared >= 1000


LITERAL_JOB = textwrap.dedent(
    '''
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.functions import udf


    @udf("string")
    def cell_label(lat: float, lng: float, res: int) -> str:
        if lat is None or lng is None:
            return None
        if res not in (5, 7, 9):
            raise ValueError("unsupported resolution")
        return f"{round(lat, res)}:{round(lng, res)}"


    def main(spark: SparkSession, path: str):
        points = spark.read.parquet(path)
        points.withColumn("cell", cell_label(F.col("lat"), F.col("lng"), F.lit(7))).write.parquet(path + "_cells")
    '''
)

LABEL_SQL = sql("lat, lng, res", "F.lit(None).cast('string')")


def test_an_argument_the_job_passes_as_a_literal_is_generated_at_that_literal(tmp_path, workers):
    root = job_root(tmp_path, "cells.py", LITERAL_JOB)
    created = workspaces.init_workspace(root, "jobs/cells.py", "cell_label")
    res = created.udf.args[2]
    call_line = next(number for number, line in enumerate(LITERAL_JOB.splitlines(), 1) if "F.lit(7)" in line)
    assert res.values == [7] and res.values_from.endswith(f"(line {call_line})"), res
    opened = workspaces.Workspace.open_intact(root, created.workspace)
    assert derivation.rederive(root, opened.path, opened.config).matches
    files.write_file(root, created.workspace, "candidate/label.py", LABEL_SQL)
    result = byte_compare(root, workers, created.workspace, "label", hidden_rows=1000)
    # at res 7 the original never raises, so every hidden row is evidence
    assert result.original_raised.count == 0 and result.evidence.hidden_rows_compared == 1000
    assert result.policy.argument_domains == [f"res: only 7 ({res.values_from})"]
    data = bench_data.generate(opened, 500, spec={"lat": {"min": -1, "max": 1}})
    assert {c.name: c.generated_from for c in data.columns}["res"].startswith("only the job's literal 7")

    widened = workspaces.init_workspace(root, "jobs/cells.py", "cell_label", workspace="aether_workspaces/widened", whole_domain=["res"])
    assert widened.udf.args[2].values is None and widened.udf.args[2].values_from.startswith("widened")
    opened_wide = workspaces.Workspace.open_intact(root, widened.workspace)
    assert derivation.rederive(root, opened_wide.path, opened_wide.config).matches
    files.write_file(root, widened.workspace, "candidate/label.py", LABEL_SQL)
    wide = byte_compare(root, workers, widened.workspace, "label", hidden_rows=1000)
    assert wide.original_raised.count > 500 and wide.policy.argument_domains == []


TAX_JOB = textwrap.dedent(
    '''
    from pyspark.sql.functions import udf


    @udf("double")
    def with_tax(amount: float) -> float:
        return amount * 1.2  # raises TypeError on a null amount
    '''
)

TAX_SQL = sql("amount", "F.when(amount.isNull(), F.raise_error(F.lit('null amount'))).otherwise(amount * 1.2)")


def test_benchmark_data_avoids_what_the_original_raises_on_and_says_so(tmp_path, workers):
    root = job_root(tmp_path, "tax.py", TAX_JOB)
    ws = workspaces.init_workspace(root, "jobs/tax.py", "with_tax").workspace
    files.write_file(root, ws, "tests/cases.py", "CASES = [{'args': [10.0], 'expected': 12.0, 'why': 'taxed'}, {'args': [None], 'raises': 'TypeError', 'why': 'null'}]\n")
    files.write_file(root, ws, "candidate/tax.py", TAX_SQL)
    # default data (5% nulls) would fail the original's mode: the gate's comparison learned why
    result = run_benchmark(root, workers, ws, "tax", rows=20_000, repeats=1, warmup=0, modes=["original", "candidate"])
    assert result.speedup is not None and result.data_spec["amount"]["null_rate"] == 0.0
    assert result.data_spec_from[0].startswith("amount: null_rate=0.0, because amount null: the original raised on"), result.data_spec_from
    # a spec that brings the nulls back is refused before anything is timed, with the spec to use
    with pytest.raises(ToolError, match=r'the original raises on \d+ of 2000 sampled rows .* run it again with spec=\{"amount": \{"null_rate": 0.0\}\}'):
        run_benchmark(root, workers, ws, "tax", rows=20_000, repeats=1, warmup=0, modes=["original", "candidate"], spec={"amount": {"null_rate": 0.5}})


def test_bad_widening_and_mixed_deviations_are_refused_saying_what_to_do(tmp_path, root, workspace):
    cells = job_root(tmp_path / "cells", "cells.py", LITERAL_JOB)
    with pytest.raises(ToolError, match=r"whole_domain names nope, which the UDF does not take; its arguments are: lat, lng, res"):
        workspaces.init_workspace(cells, "jobs/cells.py", "cell_label", whole_domain=["nope"])
    with pytest.raises(ToolError, match=r"whole_domain names 'lat', but the job does not pass it as a literal at every call"):
        workspaces.init_workspace(cells, "jobs/cells.py", "cell_label", whole_domain=["lat"])
    assert not (cells.path / "aether_workspaces").exists()
    files.write_file(root, workspace, "candidate/fee_sql.py", SQL_CANDIDATE)
    with pytest.raises(ToolError, match="returns_where_original_raises and ulp_tolerance are separate deviations"):
        deviation_records.record_deviation(root, workspace, "fee_sql", "null where it raises, and close floats", "both at once is two claims", ulp_tolerance=2, returns_where_original_raises=True)
