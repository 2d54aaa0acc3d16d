"""validate_on_data: the original and a candidate over the user's own data, compared inside Spark.

A candidate with mismatches planted on chosen weights runs over a generated dataset; the counts by
kind must equal those computed here from the data alone. On a standalone cluster and through Spark
Connect only an audited candidate runs, and comes out equal on every row. An honest candidate over
CSV data with other column names comes out equal.
"""

import json
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.tools import workspaces
from aether_mcp.tools.cheat_audit import audit_candidate
from aether_mcp.tools.conversion_report import report
from aether_mcp.tools.data_validation import validate_on_data

# SQL_CANDIDATE's logic, wrong on purpose where the weight is one of the planted values
PLANTED_SQL = textwrap.dedent(
    '''
    from pyspark.sql import functions as F

    TARGET = "sql"


    def build(weight, express):
        fee = F.when(weight < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (weight - 2.0) * 1.5)
        checked = (
            F.when((weight <= 0) & (weight != -1.0), F.raise_error(F.lit("weight must be positive")))
            .when(weight == 9.5, F.raise_error(F.lit("planted")))
            .otherwise(fee)
        )
        out = F.when(weight.isNull(), F.lit(None).cast("double")).when(express, checked * 2).otherwise(checked)
        return (
            F.when(F.isnan(weight), F.lit(None).cast("double"))
            .when(weight == 7.25, out + 1e-9)
            .when(weight == 8.0, F.lit(float("nan")))
            .otherwise(out)
        )
    '''
)
# the same mistakes in VECTORIZED_CANDIDATE's logic: a batch that raises is split to find the rows
PLANTED_VECTORIZED = textwrap.dedent(
    '''
    import numpy as np
    import pandas as pd

    TARGET = "vectorized"


    def evaluate(weight, express):
        missing = weight.isna().to_numpy()
        w = weight.to_numpy(dtype="float64", na_value=1.0)
        if (w == 9.5).any():
            raise ValueError("planted")
        if ((w <= 0) & (w != -1.0)).any():
            raise ValueError("weight must be positive")
        fee = np.where(w < 2.0, 4.99, 4.99 + (w - 2.0) * 1.5)
        fee = np.where(express.to_numpy(dtype=bool, na_value=False), fee * 2, fee)
        fee = np.where(w == 7.25, fee + 1e-9, fee)
        fee = np.where(w == 8.0, np.nan, fee)
        return pd.Series(pd.arrays.FloatingArray(fee, missing | np.isnan(w)))
    '''
)
WEIGHTS = [0.5, 1.0, 2.0, 3.3, 7.25, 8.0, 9.5, -1.0, -2.0, 0.0, float("nan"), 12.0]


def _parcels(path: Path, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    weight = rng.choice(WEIGHTS, rows)
    missing = rng.random(rows) < 0.05
    express = rng.random(rows) < 0.5
    pq.write_table(pa.table({"parcel_kg": pa.array(weight, mask=missing), "is_express": pa.array(express), "parcel_id": pa.array(np.arange(rows))}), path)
    return weight, missing


def _expected(weight: np.ndarray, missing: np.ndarray) -> dict[str, int]:
    """The counts by kind, from the data and the planted values alone."""
    present = ~missing
    with np.errstate(invalid="ignore"):
        return {
            "missing_row": 0,
            "raised_where_original_returned": int((present & (weight == 9.5)).sum()),
            "value_where_original_raised": int((present & (weight == -1.0)).sum()),
            "null_vs_value": int((present & np.isnan(weight)).sum()),  # the original gives NaN, the candidate null
            "nan": int((present & (weight == 8.0)).sum()),
            "signed_zero": 0,
            "float_bits": int((present & (weight == 7.25)).sum()),
            "value": 0,
        }


@pytest.fixture
def planted(root, workspace):
    (Path(workspace) / "candidate" / "planted.py").write_text(PLANTED_SQL)
    (Path(workspace) / "candidate" / "planted_vectorized.py").write_text(PLANTED_VECTORIZED)
    (root.path / "data").mkdir()
    weight, missing = _parcels(root.path / "data" / "parcels.parquet", 3000, seed=3)
    return workspace, weight, missing


def _check_planted(result, weight, missing) -> None:
    expected = _expected(weight, missing)
    assert result.counts == expected
    with np.errstate(invalid="ignore"):
        raised = int((~missing & (weight <= 0)).sum())
    assert result.rows == len(weight) and result.original_raised == raised and result.rows_compared == len(weight) - raised
    assert result.mismatches == sum(expected.values()) and result.verdict == "mismatch" and result.equal is False
    assert result.extra_rows == 0 and result.duplicate_rows == 0
    # real rows, each of the kind it is listed under
    assert len(result.samples) == 20 and {s.kind for s in result.samples} <= {k for k, n in expected.items() if n}
    for sample in result.samples:
        shown = float(sample.args[0]) if sample.args[0] != "None" else None
        if sample.kind == "float_bits":
            assert shown == 7.25 and sample.original != sample.candidate
        if sample.kind == "value_where_original_raised":
            assert shown == -1.0 and sample.original == "raised ValueError: weight must be positive"
        if sample.kind == "raised_where_original_returned":
            assert shown == 9.5 and sample.candidate.startswith("raised ")
        if sample.kind == "null_vs_value":
            assert sample.args[0] == "nan" and sample.original == "nan" and sample.candidate == "None"
    record = json.loads(Path(result.result_path).read_text())
    assert record["counts"] == expected
    # the original ran where it returned; the rows it raised on were found and kept with their error
    assert result.original.raised_rows == raised and "ValueError: weight must be positive" in result.original.timed
    assert result.speedup is None  # both sides raised on some rows: no like-for-like timing


@pytest.mark.slow
def test_the_planted_mismatches_are_counted_exactly_by_kind(root, planted):
    workspace, weight, missing = planted
    seen = []
    result = validate_on_data(root, workspace, "planted", "data/parcels.parquet", columns=["parcel_kg", "is_express"], progress=lambda done, total, message: seen.append((done, total)))
    _check_planted(result, weight, missing)
    assert result.master == "local[*]" and result.format == "parquet" and result.casts == []
    assert result.confined, result.confinement
    assert all(later[0] >= earlier[0] for earlier, later in zip(seen, seen[1:])) and seen[-1][0] == seen[-1][1]
    # the report shows the run with its counts by kind, as evidence on the candidate's current content
    section = _section(report(root, workspace).embedded_markdown, "Validation on data")
    row = next(line for line in section if line.startswith(f"| {Path(result.result_path).parent.name} |"))
    assert "| planted |" in row and f"| {result.rows_compared:,} of {result.rows:,} |" in row and "| mismatch |" in row
    assert all(f"{kind} {n}" in row for kind, n in _expected(weight, missing).items() if n)


@pytest.mark.slow
def test_on_a_cluster_only_an_audited_candidate_runs_and_every_row_is_compared(root, workers, planted, standalone_cluster, connect_server):
    """A remote master's executors are not confined here: a candidate reaches them only with audit_candidate PASS on
    its current bytes (the refusals one by one are in test_cluster_gate.py). The planted candidate has none; the
    honest one, audited at the audit's default sizes, runs on a standalone cluster and through Spark Connect."""
    workspace, weight, missing = planted
    with pytest.raises(ToolError, match=f"validate_on_data on {standalone_cluster} would run candidate 'planted_vectorized' on executors outside"):
        validate_on_data(root, workspace, "planted_vectorized", "data/parcels.parquet", columns=["parcel_kg", "is_express"], master=standalone_cluster)
    (Path(workspace) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE)
    audit = audit_candidate(root, workers, workspace, "fee")
    assert audit.verdict == "PASS", audit.reasons
    with np.errstate(invalid="ignore"):
        raised = int((~missing & (weight <= 0)).sum())
    for master in (standalone_cluster, connect_server):
        result = validate_on_data(root, workspace, "fee", "data/parcels.parquet", columns=["parcel_kg", "is_express"], master=master)
        assert result.master == master and "outside this confinement" in result.confinement
        assert result.verdict == "equal" and result.equal is True and result.mismatches == 0 and set(result.counts.values()) == {0}, result.samples
        assert result.rows == len(weight) and result.original_raised == raised and result.rows_compared == len(weight) - raised
        # the candidate raised exactly where the original did, each row found by splitting the batches that raised
        assert result.candidate_run.raised_rows == raised and result.extra_rows == 0 and result.duplicate_rows == 0


@pytest.mark.slow
def test_an_equal_candidate_over_csv_with_other_column_names_is_equal_and_timed(root, workspace):
    (Path(workspace) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE)
    rng = np.random.default_rng(5)
    lines = ["kg,express_flag,note"] + [f"{w:.3f},{'true' if e else 'false'},x" for w, e in zip(rng.uniform(0.1, 40.0, 2000), rng.random(2000) < 0.5)]
    lines.append(",true,missing weight")
    (root.path / "exports").mkdir()
    (root.path / "exports" / "parcels.csv").write_text("\n".join(lines) + "\n")
    result = validate_on_data(root, workspace, "fee", "exports/parcels.csv", columns=["kg", "express_flag"], limit=1500)
    assert result.verdict == "equal" and result.equal is True and result.mismatches == 0, result.samples
    assert result.rows == 1500 and result.rows_compared == 1500 and result.original_raised == 0
    # CSV columns arrive as strings and are cast to the declared types, which the result says
    assert [(c["argument"], c["from"], c["to"]) for c in result.casts] == [("weight", "string", "double"), ("express", "string", "boolean")]
    assert result.original.raised_rows == 0 and result.candidate_run.raised_rows == 0 and result.speedup is not None and result.speedup > 0
    assert result.jvm_compiler == "quick"  # the original's timing JVM, as this suite's environment asks (conftest)
    assert result.original.timed == result.candidate_run.timed == "every row, as the job wires it"
    # the report counts it as evidence for the candidate it ran, until the candidate changes
    assert "| equal |" in "\n".join(_section(report(root, workspace).embedded_markdown, "Validation on data"))
    # fifty equal rows are not a verdict: equal needs [compare] min_compared_rows (1000) compared rows
    few = validate_on_data(root, workspace, "fee", "exports/parcels.csv", columns=["kg", "express_flag"], limit=50)
    assert few.equal is None and few.mismatches == 0 and few.rows_compared == 50
    assert few.verdict.startswith("too little evidence: 50 rows compared where equal needs 1000; pass a larger limit"), few.verdict
    assert "| too little evidence |" in "\n".join(_section(report(root, workspace).embedded_markdown, "Validation on data"))
    with open(Path(workspace) / "candidate" / "fee.py", "a") as changed:
        changed.write("# edited after the validation\n")
    assert "| equal (stale) |" in "\n".join(_section(report(root, workspace).embedded_markdown, "Validation on data"))


def _section(markdown: str, title: str) -> list[str]:
    lines = markdown.splitlines()
    start = lines.index(f"## {title}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1 : end]


def test_validate_on_data_refuses_what_it_cannot_compare(root, workspace):
    (Path(workspace) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE)
    (root.path / "data").mkdir()
    (root.path / "data" / "notes.txt").write_text("x\n")
    cases = [
        (dict(data="../outside.parquet"), "outside"),
        (dict(data="data/missing.parquet"), "does not exist"),
        (dict(data="data/notes.txt"), "cannot tell the format"),
        (dict(data="s3a://bucket/table"), "pass format="),
        (dict(data="data/notes.txt", columns=["only_one"]), "one data column per argument"),
        (dict(data="data/notes.txt", format="csv", master="mesos://x"), "not a Spark master URL"),
        (dict(data="data/notes.txt", candidate="nope"), "candidate"),
    ]
    for arguments, words in cases:
        call = {"candidate": "fee", **arguments}
        with pytest.raises(ToolError, match=words):
            validate_on_data(root, workspace, **call)
    assert not (Path(workspace) / ".aether" / "validate").exists() or not any((Path(workspace) / ".aether" / "validate").iterdir())


@pytest.mark.slow
def test_a_missing_column_is_named_with_the_columns_the_data_has(root, workspace):
    (Path(workspace) / "candidate" / "fee.py").write_text(VECTORIZED_CANDIDATE)
    (root.path / "data").mkdir()
    pq.write_table(pa.table({"kg": [1.0, 2.0], "is_express": [True, False]}), root.path / "data" / "p.parquet")
    with pytest.raises(ToolError, match=r"no column 'weight', 'express'.*columns=\[\.\.\.\].*kg double, is_express boolean"):
        validate_on_data(root, workspace, "fee", "data/p.parquet")
    assert not list((Path(workspace) / ".aether" / "validate").glob("*/candidate"))  # the candidate never ran


def test_an_aggregation_is_refused(root):
    (root.path / "jobs" / "agg.py").write_text(
        textwrap.dedent(
            '''
            import pandas as pd
            from pyspark.sql.functions import pandas_udf


            @pandas_udf("double")
            def spread(v: pd.Series) -> float:
                return float(v.max() - v.min())
            '''
        )
    )
    created = workspaces.init_workspace(root, "jobs/agg.py", "spread", arg_types={"v": "double"})
    (Path(created.workspace) / "candidate" / "s.py").write_text('from pyspark.sql import functions as F\n\nTARGET = "sql"\n\n\ndef build(v):\n    return F.max(v) - F.min(v)\n')
    with pytest.raises(ToolError, match="aggregation"):
        validate_on_data(root, created.workspace, "s", "jobs/agg.py", format="csv")
