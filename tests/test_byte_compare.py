"""byte_compare: equal candidates pass on every call; planted one-branch bugs fail with a counterexample."""

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import EXAMPLE_UDFS, EXAMPLES, SQL_CANDIDATE, VECTORIZED_CANDIDATE
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.judge.compare import Difference
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.tools import files, workspaces
from aether_mcp.tools.byte_compare import MISMATCHES_PER_SOURCE, _examples, byte_compare
from aether_mcp.tools.suite_runs import run_tests

pytestmark = pytest.mark.slow

MATH_JOB = textwrap.dedent(
    '''
    from pyspark.sql.functions import udf


    @udf("double")
    def price_cents(amount: float) -> float:
        if amount is None:
            return None
        return round(amount, 2)


    @udf("bigint")
    def bucket(n: int) -> int:
        if n is None:
            return None
        return n % 7


    @udf("double")
    def magnitude(x: float) -> float:
        if x is None:
            return None
        return -x if x < 0 else x
    '''
)


def sql(body: str) -> str:
    return f"from pyspark.sql import functions as F\n\nTARGET = 'sql'\n\n\ndef build(*cols):\n    {body}\n"


@pytest.fixture
def math_root(tmp_path) -> SandboxRoot:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "math_job.py").write_text(MATH_JOB)
    return SandboxRoot(tmp_path)


def math_workspace(root: SandboxRoot, udf: str, candidates: dict[str, str]) -> str:
    ws = workspaces.init_workspace(root, "jobs/math_job.py", udf).workspace
    for name, source in candidates.items():
        files.write_file(root, ws, f"candidate/{name}.py", source)
    return ws


def one_udf_workspace(tmp_path, udf_text: str, udf: str) -> tuple[SandboxRoot, str]:
    """A job of one UDF (`udf_text`, after the udf import), and its workspace."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "job.py").write_text("from pyspark.sql.functions import udf\n\n\n" + udf_text)
    root = SandboxRoot(tmp_path)
    return root, workspaces.init_workspace(root, "jobs/job.py", udf).workspace


def loyalty_workspace(tmp_path, workers, candidates: dict[str, str]) -> tuple[SandboxRoot, str]:
    shutil.copytree(EXAMPLES / "loyalty_pricing", tmp_path / "loyalty_pricing")
    root = SandboxRoot(tmp_path)
    ws = workspaces.init_workspace(root, "loyalty_pricing/job.py", "loyalty_discount", arg_types={"age": "int"}).workspace
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / "loyalty_pricing" / "cases.py").read_text())
    for name, source in candidates.items():
        files.write_file(root, ws, f"candidate/{name}.py", source)
    return root, ws




@pytest.mark.parametrize("example, udf, arg_types, candidate", EXAMPLE_UDFS, ids=[e[0] for e in EXAMPLE_UDFS])
def test_equivalent_example_candidates_pass_on_every_call(tmp_path, workers, example, udf, arg_types, candidate):
    shutil.copytree(EXAMPLES / example, tmp_path / example)
    root = SandboxRoot(tmp_path)
    ws = workspaces.init_workspace(root, f"{example}/job.py", udf, arg_types=arg_types).workspace
    files.write_file(root, ws, "tests/cases.py", (EXAMPLES / example / "cases.py").read_text())
    files.write_file(root, ws, f"candidate/{candidate}.py", (EXAMPLES / example / "candidates" / f"{candidate}.py").read_text())
    for _ in range(3):  # a fresh secret seed and batch shape each time
        result = byte_compare(root, workers, ws, candidate)
        assert result.equal, result.mismatches[:3]
        assert [(s.source, s.mismatched) for s in result.sources] == [("tests", 0), ("edge", 0), ("hidden", 0)]
        assert result.rows_compared >= 20_000 and result.error is None and result.contract_problems == []


def test_boundary_off_by_one_is_caught_at_the_boundary(tmp_path, workers):
    good = (EXAMPLES / "loyalty_pricing" / "candidates" / "discount_sql.py").read_text()
    off_by_one = good.replace("age >= SENIOR_AGE", "age > SENIOR_AGE")
    assert off_by_one != good
    root, ws = loyalty_workspace(tmp_path, workers, {"off_by_one": off_by_one})
    files.write_file(root, ws, "tests/cases.py", "CASES = []\n")  # found without being told
    result = byte_compare(root, workers, ws, "off_by_one")
    assert not result.equal
    hidden = [m for m in result.mismatches if m.source in ("hidden", "edge")]
    assert any(m.args[0] == "65" for m in hidden), hidden


def test_trim_for_strip_is_caught_with_the_whitespace_in_the_counterexample(tmp_path, workers):
    good = (EXAMPLES / "loyalty_pricing" / "candidates" / "discount_sql.py").read_text()
    naive_trim = good.replace("F.trim(tier, F.lit(PY_WHITESPACE))", "F.trim(tier)")
    assert naive_trim != good
    root, ws = loyalty_workspace(tmp_path, workers, {"naive_trim": naive_trim})
    files.write_file(root, ws, "tests/cases.py", "CASES = []\n")
    result = byte_compare(root, workers, ws, "naive_trim")
    assert not result.equal
    shown = [m.args[2] for m in result.mismatches]
    assert any(re.search(r"\\t|\\n|\\r|\\x|\\u|\\u3000", tier) for tier in shown), shown


def test_python_round_versus_spark_round_is_caught(math_root, workers):
    ws = math_workspace(math_root, "price_cents", {"spark_round": sql("return F.round(cols[0], 2)")})
    result = byte_compare(math_root, workers, ws, "spark_round")
    assert not result.equal
    assert any(m.kind == "value" for m in result.mismatches)


def test_modulo_on_negatives_is_caught(math_root, workers):
    ws = math_workspace(math_root, "bucket", {"spark_mod": sql("return cols[0] % 7"), "pmod": sql("return F.pmod(cols[0], F.lit(7))")})
    wrong = byte_compare(math_root, workers, ws, "spark_mod")
    assert not wrong.equal and any(m.args[0].startswith("-") for m in wrong.mismatches)
    assert byte_compare(math_root, workers, ws, "pmod").equal


def test_lost_sign_of_zero_and_invented_values_for_null_are_caught(math_root, workers):
    candidates = {
        "abs": sql("return F.abs(cols[0])"),
        "zero_for_null": sql("return F.coalesce(F.when(cols[0] < 0, -cols[0]).otherwise(cols[0]), F.lit(0.0))"),
        "faithful": sql("return F.when(cols[0] < 0, -cols[0]).otherwise(cols[0])"),
    }
    ws = math_workspace(math_root, "magnitude", candidates)
    kinds = {name: {m.kind for m in byte_compare(math_root, workers, ws, name, hidden_rows=2000).mismatches} for name in candidates}
    assert "sign of zero" in kinds["abs"]
    assert "null vs value" in kinds["zero_for_null"]
    assert kinds["faithful"] == set()


def test_nan_or_null_everywhere_fails(math_root, workers):
    ws = math_workspace(
        math_root,
        "magnitude",
        {"nan": sql("return F.lit(float('nan'))"), "null": sql("return F.lit(None).cast('double')")},
    )
    for name, kind in (("nan", "NaN"), ("null", "null vs value")):
        result = byte_compare(math_root, workers, ws, name, hidden_rows=500)
        assert not result.equal and kind in {m.kind for m in result.mismatches}


def test_a_candidate_that_raises_is_reported_not_a_crash(math_root, workers):
    candidates = {
        "broken_import": "import numpy\nTARGET = 'vectorized'\nraise RuntimeError('boom at import')\ndef evaluate(x):\n    return x\n",
        "raises_in_batches": "TARGET = 'vectorized'\n\ndef evaluate(x):\n    raise ZeroDivisionError('nope')\n",
        "bad_build": sql("return 1 / 0"),
    }
    ws = math_workspace(math_root, "magnitude", candidates)
    broken = byte_compare(math_root, workers, ws, "broken_import", hidden_rows=200)
    assert not broken.equal and "boom at import" in broken.error
    raising = byte_compare(math_root, workers, ws, "raises_in_batches", hidden_rows=200)
    assert not raising.equal and all(m.kind == "exception" for m in raising.mismatches)
    assert any("ZeroDivisionError" in m.actual for m in raising.mismatches)
    bad = byte_compare(math_root, workers, ws, "bad_build", hidden_rows=200)
    assert not bad.equal and "ZeroDivisionError" in bad.error


def test_special_cased_batch_sizes_are_caught_on_every_call(root, workspace, workers):
    sneaky = VECTORIZED_CANDIDATE.replace(
        "    return pd.Series(pd.arrays.FloatingArray(fee, missing))",
        "    if len(weight) < 8:\n        fee = fee * 0.0\n    return pd.Series(pd.arrays.FloatingArray(fee, missing))",
    )
    files.write_file(root, workspace, "candidate/sneaky.py", sneaky)
    for _ in range(2):
        assert not byte_compare(root, workers, workspace, "sneaky", hidden_rows=1000).equal




def test_the_judged_python_workers_keep_what_their_daemon_preloaded_out_of_gc(root, workspace, workers):
    # PySpark's reused workers run gc.collect() after every task; in the judge's workers it skips the libraries the
    # daemon preloaded (tens of thousands of objects) and sees only what the candidate made (python_daemon)
    files.write_file(root, workspace, "candidate/gc_seen.py", "import gc\n\nTARGET = 'vectorized'\n\n\ndef evaluate(weight, express):\n    raise ValueError(f'frozen={gc.get_freeze_count()}')\n")
    compared = byte_compare(root, workers, workspace, "gc_seen", hidden_rows=0)
    seen = {int(m.actual.rsplit("frozen=", 1)[1].split()[0].strip("')\"")) for m in compared.mismatches}
    assert seen and min(seen) > 10_000, seen


def test_output_type_must_match_the_original(math_root, workers):
    ws = math_workspace(math_root, "magnitude", {"as_decimal": sql("return F.abs(cols[0]).cast('decimal(20,4)')")})
    result = byte_compare(math_root, workers, ws, "as_decimal", hidden_rows=200)
    assert not result.equal
    assert result.contract_problems[0].startswith("the candidate returns decimal(20,4) but the original returns double")


def test_run_tests_and_byte_compare_agree_on_every_case(tmp_path, workers):
    naive = (EXAMPLES / "loyalty_pricing" / "candidates" / "naive_sql.py").read_text()
    root, ws = loyalty_workspace(tmp_path, workers, {"naive": naive})
    tests = run_tests(root, workers, ws, "candidate:naive")
    compared = byte_compare(root, workers, ws, "naive", hidden_rows=0)
    failing_args = {re.search(r"args=(\[.*?\]) \(", t.message).group(1) for t in tests.tests if t.outcome == "failed"}
    tests_source = next(s for s in compared.sources if s.source == "tests")
    assert tests_source.mismatched == tests.failed == len(failing_args)
    shown = {"[" + ", ".join(m.args) + "]" for m in compared.mismatches if m.source == "tests"}
    assert shown <= failing_args


def test_refusals(root, workspace, workers, tmp_path):
    with pytest.raises(ToolError, match="candidate/nope.py does not exist"):
        byte_compare(root, workers, workspace, "nope")
    files.write_file(root, workspace, "candidate/fee_sql.py", SQL_CANDIDATE)
    with pytest.raises(ToolError, match="hidden_rows must be between 0 and 200000"):
        byte_compare(root, workers, workspace, "fee_sql", hidden_rows=-1)
    (Path(workspace) / "original" / "udf.py").write_text("def shipping_fee(weight, express):\n    return 1.0\n")
    with pytest.raises(ToolError, match="edited behind the server's back"):
        byte_compare(root, workers, workspace, "fee_sql")


IDENTITY_TYPES = ["boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(12,3)", "string", "binary", "date", "timestamp", "array<double>", "array<string>"]


def test_every_supported_type_round_trips_through_generation_evaluation_and_comparison(tmp_path, workers):
    # An identity UDF per type against a pure-SQL passthrough: any difference would be the harness's own.
    names = {ddl: "same_" + re.sub(r"\W", "_", ddl) for ddl in IDENTITY_TYPES}
    source = "from pyspark.sql.functions import udf\n" + "".join(
        f"\n\n@udf({ddl!r})\ndef {name}(x):\n    return x\n" for ddl, name in names.items()
    )
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "types.py").write_text(source)
    root = SandboxRoot(tmp_path)
    for ddl, name in names.items():
        ws = workspaces.init_workspace(root, "jobs/types.py", name, arg_types={"x": ddl}).workspace
        files.write_file(root, ws, "candidate/passthrough.py", sql("return cols[0]"))
        result = byte_compare(root, workers, ws, "passthrough", hidden_rows=300)
        assert result.equal, (ddl, result.error, result.contract_problems, result.mismatches[:2])
        assert result.rows_compared > 300


def test_a_sql_candidate_that_patches_functions_and_fails_to_import_leaves_nothing_behind(tmp_path, workers):
    saboteur = (
        "from pyspark.sql import functions as F\n"
        "F.round = lambda column, scale=0: F.lit(0.0)  # it runs in a throwaway process, so it reaches no later build\n"
        "TARGET = 'sql'\n"
        "raise RuntimeError('half-imported')\n"
    )
    good = (EXAMPLES / "loyalty_pricing" / "candidates" / "discount_sql.py").read_text()
    root, ws = loyalty_workspace(tmp_path, workers, {"saboteur": saboteur, "discount_sql": good})
    broken = byte_compare(root, workers, ws, "saboteur", hidden_rows=100)
    assert "half-imported" in broken.error
    # a build that reaches for a Spark session is told it has none, and what it may do instead
    session = "from pyspark.sql import SparkSession\nTARGET = 'sql'\n\ndef build(age, amount, tier):\n    SparkSession.getActiveSession().conf.set('x', 'y')\n    return amount\n"
    files.write_file(root, ws, "candidate/session.py", session)
    refused = byte_compare(root, workers, ws, "session", hidden_rows=100)
    assert "runs without a Spark session: compose Columns" in refused.error, refused.error
    assert byte_compare(root, workers, ws, "discount_sql", hidden_rows=1000).equal


def test_mismatches_are_counted_by_kind_and_shown_as_distinct_examples(math_root, workers):
    # wrong two ways: negatives keep their sign (value) and zeros become null (null vs value)
    ws = math_workspace(math_root, "magnitude", {"two_bugs": sql("return F.when(cols[0] == 0, F.lit(None).cast('double')).otherwise(cols[0])")})
    result = byte_compare(math_root, workers, ws, "two_bugs", hidden_rows=2000)
    assert not result.equal
    for source in result.sources:
        counted = [k for k in result.mismatch_kinds if k.source == source.source]
        assert sum(k.rows for k in counted) == source.mismatched
        shown = [m for m in result.mismatches if m.source == source.source]
        assert {m.kind for m in shown} == {k.kind for k in counted}  # every kind has an example
        pairs = [(m.expected, m.actual) for m in shown if not m.shrunk_from]
        assert len(pairs) == len(set(pairs)) or sum(k.distinct for k in counted) < len(pairs)
    edge = {k.kind for k in result.mismatch_kinds if k.source == "edge"}
    assert edge == {"value", "null vs value"}


def test_examples_show_new_pairs_of_every_kind_before_any_repeat():
    # a kind with two pairs over many rows (zeros become null) listed first, and a kind with a new pair on every row
    expected = [0.0, -0.0] * 30 + [float(k) for k in range(1, 31)]
    actual = [None] * 60 + [-float(k) for k in range(1, 31)]
    groups = {
        ("hidden", "null vs value"): [(i, Difference("null vs value", "")) for i in range(60)],
        ("hidden", "value"): [(i, Difference("value", "")) for i in range(60, 90)],
    }
    chosen = _examples(groups, expected, actual)
    pairs = [(repr(expected[i]), repr(actual[i])) for i, _ in chosen]
    assert len(chosen) == MISMATCHES_PER_SOURCE and len(set(pairs)) == len(pairs), pairs
    assert {found.kind for _, found in chosen} == {"null vs value", "value"}
    # once every kind's pairs are shown, repeats fill the rest
    few = {key: entries[:4] for key, entries in groups.items() if key[1] == "null vs value"}
    assert [(expected[i], actual[i]) for i, _ in _examples(few, expected, actual)] == [(0.0, None), (-0.0, None), (0.0, None), (-0.0, None)]


def test_a_float_result_reports_its_distance_in_float_ulps(tmp_path, workers):
    root, ws = one_udf_workspace(tmp_path, "@udf('float')\ndef tripled(x: float) -> float:\n    return None if x is None else x * 3.0\n", "tripled")
    files.write_file(root, ws, "candidate/drift.py", sql("return (cols[0].cast('double') * 3.0 * (1 + 1e-7)).cast('float')"))
    result = byte_compare(root, workers, ws, "drift", hidden_rows=1000)
    values = [m for m in result.mismatches if m.kind == "value"]
    assert not result.equal and values
    assert all(m.ulp_distance is not None and 1 <= m.ulp_distance <= 4 and "float32 ULP apart" in m.detail for m in values), values


def test_no_verdict_when_the_original_gives_a_value_on_too_few_compared_rows(tmp_path, workers):
    # the original returns on every row but gives a value on none of them: a candidate that returns
    # null everywhere matches it on all 1,000 rows, which proves nothing about the rows that matter
    root, ws = one_udf_workspace(tmp_path, "@udf('bigint')\ndef root_of_two(n: int) -> int:\n    return None if n is None or n * n != 2 else 1\n", "root_of_two")
    files.write_file(root, ws, "candidate/nothing.py", sql("return F.lit(None).cast('bigint')"))
    result = byte_compare(root, workers, ws, "nothing", hidden_rows=1000)
    evidence = result.evidence
    assert evidence.hidden_rows_compared >= 1000 and evidence.hidden_rows_with_a_value == 0 and not result.mismatches
    assert result.equal is None and not evidence.enough
    assert "the original gave a value (not null, NaN or empty) on only 0 of them where equal needs 10" in evidence.note, evidence.note


EMPTY_PARTITIONS = textwrap.dedent(
    """
    import json
    from pyspark.sql import SparkSession, types as T
    from aether_mcp.evaluation.target_evaluation import empty_partitions

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    schema = T.StructType([T.StructField("id", T.LongType(), False), T.StructField("tags", T.ArrayType(T.StringType()), True)])
    rows = spark.createDataFrame([(1, ["a"]), (2, None), (3, [])], schema).repartition(2)
    empty = empty_partitions(spark, schema, 3)
    both = rows.union(empty)
    print(json.dumps({
        "empty": [empty.rdd.getNumPartitions(), empty.count(), empty.schema == schema],
        "union": [both.rdd.getNumPartitions(), both.count(), both.schema == schema],
    }))
    """
)


def test_empty_partitions_are_made_in_the_jvm_with_the_schema_as_it_is_and_kept_by_the_union():
    # The layouts' empty partitions (a job's shuffle leaves some): made without a Python RDD, which would start a
    # Python daemon of its own after each candidate's fresh start; the optimizer cannot drop them from the union.
    import json
    import subprocess
    import sys

    completed = subprocess.run([sys.executable, "-c", EMPTY_PARTITIONS], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    seen = json.loads(completed.stdout.strip().splitlines()[-1])
    assert seen == {"empty": [3, 0, True], "union": [5, 3, True]}, seen
