"""Failures are behaviour: where the original raises the candidate must fail too, and no verdict without evidence."""

import textwrap

import pytest

from aether_mcp.judge.compare import RAISE_KIND
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import deviation_records, files, workspaces
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import audit_candidate
from conftest import SQL_CANDIDATE, VECTORIZED_CANDIDATE

pytestmark = pytest.mark.slow

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
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "raising.py").write_text(RAISING_JOB)
    return SandboxRoot(tmp_path)


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
    files.write_file(raising_root, ws, "candidate/nulls.py", "from pyspark.sql import functions as F\n\nTARGET = 'sql'\n\n\ndef build(x):\n    return F.raise_error(F.lit('no')).cast('double')\n")
    result = byte_compare(raising_root, workers, ws, "nulls", hidden_rows=500)
    assert result.equal is None and result.rows_compared == 0
    assert result.evidence.note.startswith(f"no evidence: the original raised on {result.evidence.hidden_rows_generated} of {result.evidence.hidden_rows_generated} hidden rows")
    assert result.original_raised.examples[0].original_raised.startswith(("ZeroDivisionError", "TypeError"))
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
