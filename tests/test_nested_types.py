"""Structs, maps and arrays, nested to any depth, as arguments and results: cases, JSON, the comparator,
the generators, what a vectorized candidate receives and returns, and the whole loop through Spark.

The jobs below are written for these tests in shapes public PySpark jobs use: a UDF that returns a
struct built from an array, and one that reads a struct and a map. Null and NaN stay apart inside
nested values as they do at the top level.
"""

from __future__ import annotations

import datetime as dt
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from pyspark.sql import Row
from pyspark.sql import types as T

from aether_mcp import backend
from aether_mcp.arrow_pandas import column_to_series, series_to_arrow
from aether_mcp.arrow_udf import run_on_arrow
from aether_mcp.input_json import from_json_row, to_json_row
from aether_mcp.judge.compare import classify, difference
from aether_mcp.judge.edge_inputs import edge_values
from aether_mcp.judge.hidden_inputs import hidden_rows
from aether_mcp.judge.mined_values import mine
from aether_mcp.judge.shrink import variants
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.reference.input_capture import capture_series
from aether_mcp.reference.spec_runner import Subject
from aether_mcp.spark_types import parse_type, unsupported_part
from aether_mcp.tools import case_recording, files, spec_strength, workspaces
from aether_mcp.tools.benchmarking import generate_data, run_benchmark
from aether_mcp.tools.byte_compare import byte_compare
from aether_mcp.tools.cheat_audit import audit_candidate
from aether_mcp.tools.suite_audit import _canary
from aether_mcp.tools.suite_runs import run_tests
from aether_mcp.wire import value_codec
from aether_mcp.wire.value_codec import Struct
from aether_mcp.workspace import UdfArgConfig, UdfConfig, WorkspaceConfig

STATS_JOB = '''
"""Order statistics: the price range of each order, and a weighted spread of given bounds."""
from pyspark.sql import functions as F
from pyspark.sql.functions import udf
from pyspark.sql.types import IntegerType, StructField, StructType

PRICE_RANGE = StructType([StructField("min", IntegerType()), StructField("max", IntegerType())])


@udf(returnType=PRICE_RANGE)
def min_max(values):
    if values is None:
        return None
    present = [v for v in values if v is not None]
    if not present:
        return None
    return (min(present), max(present))


@udf("struct<width:bigint,scaled:double>")
def spread(bounds, weights):
    if bounds is None or bounds.lo is None or bounds.hi is None:
        return None
    width = bounds.hi - bounds.lo
    scale = 1.0 if weights is None else weights.get("scale", 1.0)
    return {"width": width, "scaled": None if scale is None else width * scale}


@udf("struct<counts:array<bigint>,ratios:array<double>,weights:map<string,double>>")
def same(x):
    return x


def main(spark, path):
    orders = spark.read.parquet(path)
    orders.withColumn("range", min_max(F.col("prices"))).withColumn("s", spread(F.col("bounds"), F.col("weights"))).show()
'''

MIN_MAX_SQL = '''
from pyspark.sql import functions as F

TARGET = "sql"


def build(values):
    present = F.filter(values, lambda v: v.isNotNull())
    return F.when(F.size(present) > 0, F.struct(F.array_min(present).alias("min"), F.array_max(present).alias("max")))
'''

MIN_MAX_VECTORIZED = '''
from aether_mcp.backend import struct

TARGET = "vectorized"


def evaluate(values):
    present = values.list.flatten().dropna().groupby(level=0)  # elements keep their row's index
    low = present.min().reindex(values.index).astype("Int32")
    high = present.max().reindex(values.index).astype("Int32")
    return struct({"min": low, "max": high}, null=low.isna().to_numpy())
'''

SPREAD_SQL = '''
from pyspark.sql import functions as F

TARGET = "sql"


def build(bounds, weights):
    width = bounds["hi"].cast("bigint") - bounds["lo"].cast("bigint")
    scale = F.when(weights.isNotNull() & F.map_contains_key(weights, "scale"), weights["scale"]).otherwise(F.lit(1.0))
    result = F.struct(width.alias("width"), (width * scale).alias("scaled"))
    return F.when(bounds["lo"].isNotNull() & bounds["hi"].isNotNull(), result)
'''

SPREAD_VECTORIZED = '''
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from aether_mcp.backend import series, struct

TARGET = "vectorized"


def evaluate(bounds, weights):
    lo = bounds.struct.field("lo").astype("Int64")
    hi = bounds.struct.field("hi").astype("Int64")
    missing = (lo.isna() | hi.isna()).to_numpy(dtype=bool)
    width = (hi.fillna(0) - lo.fillna(0)).to_numpy(dtype="int64")
    maps = pa.array(weights.array)
    found = pc.list_value_length(pc.map_lookup(maps, pa.scalar("scale"), "all"))
    has_scale = pc.fill_null(pc.greater(found, 0), False).to_numpy(zero_copy_only=False)
    first = pc.map_lookup(maps, pa.scalar("scale"), "first")
    scale = np.where(has_scale, first.to_numpy(zero_copy_only=False), 1.0)
    scaled = series(width * scale, null=has_scale & first.is_null().to_numpy(zero_copy_only=False))
    return struct({"width": series(width), "scaled": scaled}, null=missing)
'''


def _stats_root(tmp_path: Path) -> SandboxRoot:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "stats.py").write_text(textwrap.dedent(STATS_JOB).lstrip())
    return SandboxRoot(tmp_path)


def _config(*types: str) -> WorkspaceConfig:
    args = [UdfArgConfig(name=f"a{i}", type=t) for i, t in enumerate(types)]
    return WorkspaceConfig(udf=UdfConfig(name="f", function="f", kind="row", return_type="double", args=args, source="j.py", source_line=1, form="@udf"))


# --- the codec and cases ---------------------------------------------------------------------


def test_a_struct_crosses_processes_as_a_struct_and_a_map_as_a_map():
    value = [Struct(min=1, max=None), {1: [0.5, float("nan")], 2: None}, Row(lo=-0.0, tags=["a"])]
    back = value_codec.loads(value_codec.dumps(value))
    assert type(back[0]) is Struct and list(back[0]) == ["min", "max"]
    assert type(back[1]) is dict and back[1][2] is None and math.isnan(back[1][1][1])
    assert type(back[2]) is Struct and back[2] == {"lo": 0.0, "tags": ["a"]} and math.copysign(1.0, back[2]["lo"]) == -1.0
    assert difference(value[:2], back[:2]) is None


# --- JSON input --------------------------------------------------------------------------------

NESTED = ["struct<lo:int,hi:array<double>>", "map<string,double>", "map<int,string>"]


def test_structs_are_json_objects_and_maps_objects_or_key_value_pairs():
    types = [parse_type(t) for t in NESTED]
    row = from_json_row([{"lo": 1, "hi": [2, "NaN", None]}, [["scale", "-0.0"]], [[1, "a"], [2, None]]], types, ["s", "w", "n"], 0)
    assert type(row[0]) is Struct and row[0]["lo"] == 1 and math.isnan(row[0]["hi"][1]) and row[0]["hi"][2] is None
    assert math.copysign(1.0, row[1]["scale"]) == -1.0 and row[2] == {1: "a", 2: None}
    assert from_json_row([{"hi": None}, {"scale": 2}, None], types, ["s", "w", "n"], 0)[:2] == [{"lo": None, "hi": None}, {"scale": 2.0}]
    assert to_json_row(row) == [{"lo": 1, "hi": [2.0, "NaN", None]}, {"scale": "-0.0"}, [[1, "a"], [2, None]]]


@pytest.mark.parametrize(
    "row, refusal",
    [
        ([{"low": 1}, None, None], r"'low' is not a field of struct<lo:int,hi:array<double>> \(fields: lo, hi\)\. Write a JSON object keyed by field name"),
        ([[1, [2.0]], None, None], r"\[1, \[2.0\]\] is not a value of that type\. Write a JSON object keyed by field name"),
        ([{"lo": "x"}, None, None], r"argument 's' \(struct<lo:int,hi:array<double>>\), field 'lo': 'x' is not a value of that type\. Write a JSON integer"),
        ([None, None, {"1": "a"}], r"is not a value of that type\. Write a list of \[key, value\] pairs .*keys are int and never null"),
        ([None, [[None, 1.0]], None], r"entry 0 has a null key; Spark map keys are never null"),
        ([None, None, [[1, "a"], [1, "b"]]], r"the key 1 appears twice"),
        ([None, "scale", None], r"Write a JSON object \(\{\"key\": value, \.\.\.\}\) or a list of \[key, value\] pairs"),
    ],
)
def test_nested_json_that_does_not_fit_is_refused_saying_how_to_write_it(row, refusal):
    with pytest.raises(ToolError, match=refusal):
        from_json_row(row, [parse_type(t) for t in NESTED], ["s", "w", "n"], 0)


# --- the comparator ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, actual, kind, where",
    [
        (Struct(min=1, max=3), Struct(min=3, max=1), "value", "['min']"),
        ({"min": 1, "max": None}, Struct(min=1, max=float("nan")), "null vs value", "['max']"),
        (Struct(x=float("nan")), Struct(x=None), "null vs value", "['x']"),
        (Struct(x=0.0), Struct(x=-0.0), "sign of zero", "['x']"),
        (Struct(a=1, b=2), Struct(b=2, a=1), "keys", "fields ['a', 'b']"),
        (Struct(a=1), Struct(b=1), "keys", ""),
        ({"a": 1.0}, {"b": 1.0}, "keys", ""),
        ({0.0: "z"}, {-0.0: "z"}, "keys", ""),
        ({1: "a"}, {True: "a"}, "keys", ""),
        ({"a": [1.0, None]}, {"a": [1.0, float("nan")]}, "null vs value", "['a'][1]"),
        ([Struct(v={"k": 1})], [Struct(v={"k": 2})], "value", "[0]['v']['k']"),
        (Struct(n=1), Struct(n=1.0), "type", "['n']"),
    ],
)
def test_structs_and_maps_differ_field_by_field_and_key_by_key(expected, actual, kind, where):
    found = classify(expected, actual)
    assert found is not None and found.kind == kind and where in found.detail


def test_a_map_is_the_same_whatever_the_order_of_its_entries_and_a_case_dict_matches_a_struct():
    assert difference({"a": 1, "b": float("nan")}, {"b": float("nan"), "a": 1}) is None
    assert difference({"min": 1, "max": 3}, Struct(min=1, max=3)) is None
    assert difference([Struct(a=None)], [Struct(a=None)]) is None


# --- the generators ----------------------------------------------------------------------------


def test_edge_values_hold_a_null_struct_and_a_struct_of_nulls_and_maps_with_valid_keys_only():
    structs = edge_values(parse_type("struct<lo:int,hi:double>"))
    assert structs[0] is None and Struct(lo=None, hi=None) in structs
    assert any(isinstance(s, Struct) and isinstance(s["hi"], float) and math.isnan(s["hi"]) for s in structs)
    assert any(isinstance(s, Struct) and s["lo"] == -(2**31) for s in structs)
    maps = edge_values(parse_type("map<double,double>"))
    assert {} in maps and any(m and None in m.values() for m in maps)
    keys = [k for m in maps if m for k in m]
    assert None not in keys and not any(math.isnan(k) for k in keys) and not any(k == 0 and math.copysign(1, k) < 0 for k in keys)
    arrays = edge_values(parse_type("array<struct<a:string>>"))
    assert [] in arrays and [None] in arrays and [Struct(a=None)] in arrays


def test_hidden_rows_of_nested_types_fit_their_types_and_repeat_for_a_seed():
    types = ["struct<lo:int,hi:array<double>>", "map<string,struct<n:bigint>>", "array<map<int,boolean>>"]
    config = _config(*types)
    mined = mine("def f(a, b, c):\n    return a.lo > 7 or 'gold' in b\n")
    rows = hidden_rows(config, mined, 600, 42)
    same, other = value_codec.dumps(hidden_rows(config, mined, 600, 42)), value_codec.dumps(hidden_rows(config, mined, 600, 43))
    assert value_codec.dumps(rows) == same != other
    verifiers = [T._make_type_verifier(parse_type(t), nullable=True) for t in types]
    for row in rows:
        for value, verify in zip(row, verifiers):
            verify(value)
    structs = [row[0] for row in rows if row[0] is not None]
    assert all(type(s) is Struct for s in structs) and any(s["lo"] in (6, 7, 8) for s in structs)
    assert any(row[1] for row in rows) and any(row[1] == {} for row in rows) and any(row[2] and row[2][0] for row in rows)


def test_a_struct_shrinks_field_by_field_and_a_map_by_entries():
    assert Struct(a=None, b="xy") in variants(Struct(a=12.5, b="xy")) and all(type(v) is Struct and list(v) == ["a", "b"] for v in variants(Struct(a=12.5, b="xy")))
    assert {"j": None} in variants({"k": 3, "j": None})


# --- what a vectorized candidate receives and returns (null and NaN apart) ------------------------


def test_nested_nulls_reach_a_vectorized_candidate_apart_from_nans():
    counts = pa.array([[1, None], None, []], pa.list_(pa.int64()))
    ratios = pa.array([[float("nan"), None, 0.5], [None], None], pa.list_(pa.float64()))
    bounds = pa.array([{"lo": 1, "hi": float("nan")}, {"lo": None, "hi": None}, None], pa.struct([("lo", pa.int32()), ("hi", pa.float64())]))
    weights = pa.array([[("scale", float("nan")), ("k", None)], None, []], pa.map_(pa.string(), pa.float64()))
    seen = {}

    def evaluate(counts, ratios, bounds, weights):
        seen.update(counts=counts, ratios=ratios, bounds=bounds, weights=weights)
        return ratios

    back = run_on_arrow(evaluate, [counts, ratios, bounds, weights], pa.list_(pa.float64()))
    assert seen["counts"].iloc[0] == [1, None] and seen["counts"].isna().tolist() == [False, True, False]
    flat = seen["counts"].list.flatten()
    assert str(flat.dtype) == "int64[pyarrow]" and flat.isna().tolist() == [False, True]
    values = seen["ratios"].list.flatten()
    assert values.isna().tolist() == [False, True, False, True] and math.isnan(values.iloc[0])
    hi = seen["bounds"].struct.field("hi")
    assert math.isnan(hi.iloc[0]) and hi.isna().tolist() == [False, True, True]
    assert seen["bounds"].isna().tolist() == [False, False, True]
    assert seen["weights"].iloc[0][1] == ("k", None) and math.isnan(seen["weights"].iloc[0][0][1])
    assert back.type == ratios.type and difference(ratios.to_pylist(), back.to_pylist()) is None
    assert math.isnan(back[0][0].as_py()) and back[0][1].as_py() is None


def test_a_vectorized_candidate_returns_nested_nulls_and_nans_apart_in_every_form():
    doubles = pa.list_(pa.float64())
    for returned in (pd.Series([[float("nan"), None], None, np.array([1.5])]), pd.Series([[float("nan"), pd.NA], pd.NA, [1.5]], dtype=object)):
        back = series_to_arrow(returned, doubles)
        assert back.to_pylist()[1:] == [None, [1.5]] and math.isnan(back[0][0].as_py()) and back[0][1].as_py() is None
    pair = pa.struct([("min", pa.int32()), ("max", pa.float64())])
    frame = pd.DataFrame({"max": pd.arrays.FloatingArray(np.array([np.nan, 0.0]), np.array([False, True])), "min": pd.array([1, None], dtype="Int64")})
    assert series_to_arrow(frame, pair).to_pylist()[1] == {"min": None, "max": None} and math.isnan(series_to_arrow(frame, pair)[0]["max"].as_py())
    made = backend.struct({"min": np.array([1, 2], dtype=np.int32), "max": np.array([np.nan, 3.0])}, null=np.array([False, True]))
    back = backend.to_arrow(made, pair)
    assert back.is_null().to_pylist() == [False, True] and back[0]["min"].as_py() == 1 and math.isnan(back[0]["max"].as_py())
    mixed = series_to_arrow(pd.Series([(1, float("nan")), {"min": 2, "max": None}, Row(min=3, max=1.0), None]), pair)
    assert mixed.to_pylist()[1:] == [{"min": 2, "max": None}, {"min": 3, "max": 1.0}, None] and math.isnan(mixed[0]["max"].as_py())
    mapped = series_to_arrow(pd.Series([{"a": float("nan"), "b": None}, [("c", 1.0)], None]), pa.map_(pa.string(), pa.float64()))
    assert mapped.to_pylist()[1:] == [[("c", 1.0)], None] and mapped[0].as_py()[1] == ("b", None)
    with pytest.raises(ValueError, match=r"columns \['low', 'max'\] .* return one column per field, named min, max"):
        series_to_arrow(pd.DataFrame({"low": [1], "max": [1.0]}), pair)
    with pytest.raises(ValueError, match="a DataFrame is for a struct result"):
        series_to_arrow(pd.DataFrame({"a": [1.0]}), pa.float64())
    assert column_to_series(pa.array([[1]], pa.list_(pa.int32()))).dtype == pd.ArrowDtype(pa.list_(pa.int32()))


# --- plain-Python runs of the original (coverage, mutation) -------------------------------------


def test_the_plain_python_original_gets_rows_for_structs_and_may_return_a_tuple_dict_or_row():
    source = textwrap.dedent(
        """
        from pyspark.sql import Row

        def f(bounds, weights, form):
            if bounds is None:
                return None
            width = bounds.hi - bounds.lo
            if form == "tuple":
                return (width, weights.get("scale"))
            if form == "dict":
                return {"scaled": weights.get("scale"), "width": width}
            return Row(width=width, scaled=weights.get("scale"))
        """
    )
    subject = Subject(source, "<nested>", {"function": "f", "kind": "row", "return_type": "struct<width:bigint,scaled:double>", "arg_types": ["struct<lo:int,hi:int>", "map<string,double>", "string"]})
    rows = [[Struct(lo=1, hi=4), {"scale": float("nan")}, form] for form in ("tuple", "dict", "row")] + [[None, None, "tuple"], [{"lo": 1, "hi": 2}, {}, "dict"]]
    outputs = subject.outputs(rows, captured=False)
    assert all(type(o) is Struct and o["width"] == 3 and math.isnan(o["scaled"]) for o in outputs[:3])
    assert outputs[3] is None and type(outputs[4]).__name__ == "Raised"  # a plain dict is no Row: it has no .hi


def test_a_pandas_udf_gets_its_struct_argument_back_as_the_dataframe_spark_gave_it():
    point = pd.DataFrame({"x": pd.Series([1.0, None, float("nan")]), "y": pd.Series([2.0, 3.0, None])})
    tags = pd.Series([["a"], None, []], dtype=object)
    captured = [value_codec.loads(text) for text in capture_series(point, tags)]
    assert captured[0]["dtypes"][0] == {"struct": {"x": "float64", "y": "float64"}} and type(captured[0]["values"][0]) is Struct
    source = textwrap.dedent(
        """
        import pandas as pd

        def totals(point, tags):
            return pd.DataFrame({"total": point["x"].fillna(0) + point["y"].fillna(0), "count": tags.map(lambda t: 0 if t is None else len(t))})
        """
    )
    subject = Subject(source, "<pandas>", {"function": "totals", "kind": "pandas", "return_type": "struct<total:double,count:bigint>", "arg_types": ["struct<x:double,y:double>", "array<string>"]})
    assert subject.outputs(captured, captured=True) == [{"total": 3.0, "count": 1}, {"total": 3.0, "count": 0}, {"total": 0.0, "count": 0}]


def test_the_test_audit_canary_for_a_struct_is_a_struct_of_canaries():
    assert _canary(parse_type("struct<a:int,b:array<string>,m:map<string,double>,s:struct<d:date>>")) == {"a": 97, "b": [], "m": {}, "s": {"d": dt.date(1901, 2, 3)}}


# --- what init_workspace accepts --------------------------------------------------------------


@pytest.mark.parametrize(
    "ddl, part",
    [("struct<a:int,b:timestamp_ntz>", "timestamp_ntz"), ("array<void>", "void"), ("map<array<int>,int>", "a map whose keys are arrays"), ("struct<a:map<string,struct<b:double>>>", None), ("array<array<int>>", None)],
)
def test_one_function_says_which_nested_types_are_supported(ddl, part):
    found = unsupported_part(parse_type(ddl))
    assert (found is None) if part is None else (part in found)


def test_init_workspace_refuses_a_type_it_does_not_support_yet_at_once_naming_it(tmp_path):
    root = _stats_root(tmp_path)
    with pytest.raises(ToolError, match=r"uses timestamp_ntz, which aether-mcp does not support yet \(argument 'x' is struct<at:timestamp_ntz>\); supported: .*struct<name:T,...>.* Nothing was created"):
        workspaces.init_workspace(root, "jobs/stats.py", "same", arg_types={"x": "struct<at:timestamp_ntz>"}, return_type="int")
    assert not (tmp_path / "aether_workspaces").exists()


def test_benchmark_data_builds_arrays_structs_and_maps_with_distinct_keys(tmp_path):
    root = _stats_root(tmp_path)
    ws = workspaces.init_workspace(root, "jobs/stats.py", "spread", arg_types={"bounds": "struct<lo:int,hi:array<double>>", "weights": "map<string,double>"}).workspace
    data = generate_data(root, ws, 3000, seed=5)
    table = pq.read_table(data.path)
    assert table.schema.field("bounds").type == pa.struct([("lo", pa.int32()), ("hi", pa.list_(pa.float64()))])
    bounds, weights = table.column("bounds").combine_chunks(), table.column("weights").combine_chunks()
    assert 0 < bounds.null_count < 3000 and 0 < pa.compute.sum(bounds.field("lo").is_null()).as_py()
    entries = [row for row in weights.to_pylist() if row]
    assert entries and all(len({key for key, _ in row}) == len(row) for row in entries)
    assert "0 to 3 entries with distinct keys" in data.columns[1].generated_from and "lo: " in data.columns[0].generated_from


# --- the whole loop through Spark -------------------------------------------------------------


@pytest.mark.slow
def test_a_struct_result_goes_through_record_run_tests_and_byte_compare_with_sql_and_vectorized_candidates(tmp_path, workers):
    root = _stats_root(tmp_path)
    ws = workspaces.init_workspace(root, "jobs/stats.py", "min_max", arg_types={"values": "array<int>"}).workspace
    recorded = case_recording.record_cases(root, workers, ws, [[[3, None, 1]], [[]], [None], [[None]], [[2147483647, -2147483648]]], why="range of the non-null prices")
    assert [c.expected for c in recorded.recorded] == ["{'min': 1, 'max': 3}", "None", "None", "None", "{'min': -2147483648, 'max': 2147483647}"]
    assert "\"expected\": {'min': 1, 'max': 3}" in (Path(ws) / "tests" / "cases.py").read_text()
    files.write_file(root, ws, "candidate/range_sql.py", MIN_MAX_SQL)
    files.write_file(root, ws, "candidate/range_vectorized.py", MIN_MAX_VECTORIZED)
    swapped = MIN_MAX_SQL.replace("F.array_min(present)", "LOW").replace("F.array_max(present)", "F.array_min(present)").replace("LOW", "F.array_max(present)")
    files.write_file(root, ws, "candidate/swapped_values.py", swapped)
    files.write_file(root, ws, "candidate/swapped_fields.py", swapped.replace('alias("min")', 'alias("MAX")').replace('alias("max")', 'alias("min")').replace("MAX", "max"))
    for target in ("original", "candidate:range_sql", "candidate:range_vectorized"):
        result = run_tests(root, workers, ws, target)
        assert (result.passed, result.failed) == (5, 0), (target, [t.message for t in result.tests if t.outcome != "passed"])
    for candidate in ("range_sql", "range_vectorized"):
        compared = byte_compare(root, workers, ws, candidate, hidden_rows=1000)
        assert compared.equal, (candidate, compared.error, compared.contract_problems, compared.mismatches[:2])
        assert compared.evidence.hidden_rows_compared >= 1000 and compared.output_type == "struct<min:int,max:int>"
    # below the defaults to keep nested rows cheap: what is asserted (a PASS with watched rows compared) holds at any size;
    # the job-batch run the defaults add is tested in test_escapes.py
    audited = audit_candidate(root, workers, ws, "range_vectorized", hidden_rows_count=1000, watched_rows=(500, 5000))
    assert audited.verdict.startswith("PASS"), [(f.rule, f.evidence) for f in audited.findings]
    wrong = byte_compare(root, workers, ws, "swapped_values", hidden_rows=0)  # the cases already show it
    assert wrong.equal is False and wrong.mismatches and {m.kind for m in wrong.mismatches} == {"value"}
    assert all(m.detail.startswith("value at ['min']") for m in wrong.mismatches)
    reordered = byte_compare(root, workers, ws, "swapped_fields", hidden_rows=0)
    assert reordered.equal is False and reordered.contract_problems[0].startswith("the candidate returns struct<max:int,min:int> but the original returns struct<min:int,max:int>")


@pytest.mark.slow
def test_struct_and_map_arguments_go_through_every_step_to_a_benchmark(tmp_path, workers):
    root = _stats_root(tmp_path)
    ws = workspaces.init_workspace(root, "jobs/stats.py", "spread", arg_types={"bounds": "struct<lo:int,hi:int>", "weights": "map<string,double>"}).workspace
    inputs = [
        [{"lo": 1, "hi": 4}, {"scale": 2.5}], [{"lo": 1}, None], [None, {}], [{"lo": 3, "hi": 1}, {"scale": None}],
        [{"lo": 0, "hi": 2}, [["scale", "NaN"]]], [{"lo": 0, "hi": 2}, {"other": 1}],
    ]
    recorded = case_recording.record_cases(root, workers, ws, inputs)
    assert [c.expected for c in recorded.recorded] == ["{'width': 3, 'scaled': 7.5}", "None", "None", "{'width': -2, 'scaled': None}", "{'width': 2, 'scaled': nan}", "{'width': 2, 'scaled': 2.0}"]
    assert recorded.recorded[4].args == [{"lo": 0, "hi": 2}, {"scale": "NaN"}]
    again = case_recording.record_cases(root, workers, ws, [[{"hi": 4, "lo": 1}, [["scale", 2.5]]]])
    assert again.recorded == [] and again.duplicates == [[{"lo": 1, "hi": 4}, {"scale": 2.5}]]
    coverage = spec_strength.coverage_report(root, workers, ws)
    assert (coverage.line_percent, coverage.branch_percent) == (100.0, 100.0)  # the UDF read bounds.lo: it was given Rows
    assert spec_strength.mutation_score(root, workers, ws).killed >= 15
    files.write_file(root, ws, "candidate/spread_sql.py", SPREAD_SQL)
    files.write_file(root, ws, "candidate/spread_vectorized.py", SPREAD_VECTORIZED)
    files.write_file(root, ws, "candidate/nan_for_null.py", SPREAD_VECTORIZED.replace("null=has_scale & first.is_null().to_numpy(zero_copy_only=False)", "null=None"))
    for candidate in ("spread_sql", "spread_vectorized"):
        assert run_tests(root, workers, ws, f"candidate:{candidate}").passed == 6
        compared = byte_compare(root, workers, ws, candidate, hidden_rows=1000)
        assert compared.equal and compared.evidence.hidden_rows_compared >= 1000, (candidate, compared.error, compared.mismatches[:2])
    wrong = byte_compare(root, workers, ws, "nan_for_null", hidden_rows=0)  # the case {"scale": None} already shows it
    assert wrong.equal is False and {m.kind for m in wrong.mismatches} == {"null vs value"}
    assert any("null vs value at ['scaled']: expected None, got nan" in m.detail for m in wrong.mismatches)

    benchmarked = run_benchmark(root, workers, ws, "spread_vectorized", rows=2000, repeats=1, warmup=0, modes=["original", "candidate"])
    assert not benchmarked.failed and benchmarked.speedup and "over all 2,000 rows equals the original's" in benchmarked.output_check
    assert [c.type for c in generate_data(root, ws, 2000).columns] == ["struct<lo:int,hi:int>", "map<string,double>"]


@pytest.mark.slow
def test_nested_values_pass_through_a_vectorized_candidate_and_back_unchanged(tmp_path, workers):
    # The edge corpus sweeps each field: [None] and [nan] arrays, null map values, a struct of nulls.
    root = _stats_root(tmp_path)
    ws = workspaces.init_workspace(root, "jobs/stats.py", "same", arg_types={"x": "struct<counts:array<bigint>,ratios:array<double>,weights:map<string,double>>"}).workspace
    files.write_file(root, ws, "candidate/passthrough.py", "TARGET = 'vectorized'\n\n\ndef evaluate(x):\n    return x\n")
    compared = byte_compare(root, workers, ws, "passthrough", hidden_rows=200)
    assert compared.equal and compared.rows_compared > 200, (compared.error, compared.mismatches[:2])
