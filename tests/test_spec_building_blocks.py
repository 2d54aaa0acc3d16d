"""Mutant generation, writing cases back as literals, and JSON rows converted by the argument types."""

import datetime as dt
import math
from decimal import Decimal

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from pyspark.sql import types as T

from aether_mcp import case_file
from aether_mcp.input_json import from_json_row, to_json_row
from aether_mcp.judge.case_literals import read_case_rows
from aether_mcp.judge.mutants import generate_mutants

ORIGINAL = '''import math
LIMIT = 65
RATES = {"gold": 0.1}


def score(age, tier):
    """Docstring is never mutated."""
    if age is None or tier is None:
        return None
    if age >= LIMIT and not tier.startswith("x"):
        return RATES.get(tier.strip(), 0.0) * 2 + 1
    return 0.0
'''


def test_mutants_cover_every_operator_family_with_stable_ids_and_real_diffs():
    mutants = generate_mutants(ORIGINAL)
    operators = {m.operator for m in mutants}
    assert operators == {"comparison", "arithmetic", "constant", "string", "negation", "boolean", "return_none", "remove_if"}
    boundary = next(m for m in mutants if m.description == ">= -> >")
    assert boundary.line == 10 and "-    if age >= LIMIT" in boundary.diff and "+    if age > LIMIT" in boundary.diff
    assert not any("Docstring" in m.description for m in mutants)
    assert len({m.source for m in mutants}) == len(mutants)
    assert [m.mutant_id for m in generate_mutants(ORIGINAL)] == [m.mutant_id for m in mutants]
    for mutant in mutants:
        compile(mutant.source, mutant.mutant_id, "exec")


def test_cases_are_appended_as_literals_that_read_back_exactly(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text('"""Doc."""\n\nCASES = [\n    {"args": [1.0], "expected": 2.0, "why": "kept"}\n]\n')
    entries = [
        {"args": [float("nan"), -0.0, Decimal("1.50"), dt.date(2024, 2, 29), dt.datetime(2024, 1, 1, 12, 0, 0, 5), b"\x00", ["a", None]], "expected": float("-inf"), "why": "odd values"},
        {"args": [None, 1.0, Decimal("0"), None, None, None, []], "raises": "ValueError", "why": "raises"},
    ]
    case_file.append_cases(path, entries)
    text = path.read_text()
    assert text.startswith('"""Doc."""') and "from decimal import Decimal" in text and "from datetime import date, datetime" in text
    rows = read_case_rows(path)
    assert len(rows) == 3 and rows[0] == [1.0]
    nan, zero, dec, day, moment, raw, items = rows[1]
    assert math.isnan(nan) and math.copysign(1, zero) == -1 and dec.as_tuple() == Decimal("1.50").as_tuple()
    assert (day, moment, raw, items) == (dt.date(2024, 2, 29), dt.datetime(2024, 1, 1, 12, 0, 0, 5), b"\x00", ["a", None])
    assert '"raises": \'ValueError\'' in text


def test_appending_to_a_single_line_list_and_creating_the_file(tmp_path):
    path = tmp_path / "cases.py"
    path.write_text("CASES = [{'args': [1], 'expected': 1}]\n")
    case_file.append_cases(path, [{"args": [2], "expected": 2, "why": "w"}])
    assert read_case_rows(path) == [[1], [2]]
    fresh = tmp_path / "new" / "cases.py"
    case_file.append_cases(fresh, [{"args": [3], "expected": 3, "why": "w"}])
    assert read_case_rows(fresh) == [[3]]
    (tmp_path / "computed.py").write_text("CASES = list(range(3))\n")
    with pytest.raises(ToolError, match="CASES is not a list literal"):
        case_file.append_cases(tmp_path / "computed.py", [{"args": [1], "expected": 1, "why": "w"}])


def test_json_rows_are_converted_by_the_declared_types_and_back():
    types = [T.DoubleType(), T.DecimalType(10, 2), T.DateType(), T.TimestampType(), T.BinaryType(), T.ArrayType(T.LongType()), T.BooleanType()]
    names = ["d", "m", "day", "ts", "raw", "ids", "flag"]
    row = from_json_row(["NaN", "1.50", "2024-02-29", "2024-02-29T12:00:00", {"hex": "00ff"}, [1, None], True], types, names, 0)
    assert math.isnan(row[0]) and row[1] == Decimal("1.50") and row[2] == dt.date(2024, 2, 29)
    assert row[3] == dt.datetime(2024, 2, 29, 12) and row[4] == b"\x00\xff" and row[5] == [1, None] and row[6] is True
    assert from_json_row(to_json_row(row), types, names, 0)[1:] == row[1:]
    assert to_json_row([-0.0, float("-inf")]) == ["-0.0", "-Infinity"]


@pytest.mark.parametrize(
    "value, data_type, message",
    [
        ("abc", T.DoubleType(), r'input 0, argument \'x\' \(double\): \'abc\' is not a value of that type. Write a number, or "NaN"'),
        (1.5, T.IntegerType(), r"\(int\): 1.5 is not a value of that type. Write a JSON integer"),
        ("2024-13-01", T.DateType(), r'cannot be read .*Write "YYYY-MM-DD"'),
        ("x", T.BinaryType(), r'Write \{"hex": "00ff"\}'),
        (True, T.StringType(), "Write a JSON string"),
    ],
)
def test_bad_json_values_are_refused_with_the_expected_format(value, data_type, message):
    with pytest.raises(ToolError, match=message):
        from_json_row([value], [data_type], ["x"], 0)


def test_rows_of_the_wrong_shape_are_refused():
    with pytest.raises(ToolError, match="input 2 has 1 values but the UDF takes 2 \\(a, b\\)"):
        from_json_row([1.0], [T.DoubleType(), T.DoubleType()], ["a", "b"], 2)
    with pytest.raises(ToolError, match="must be a list of 1 argument values"):
        from_json_row(1.0, [T.DoubleType()], ["a"], 0)
