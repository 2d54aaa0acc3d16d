"""Inputs byte_compare generates: mined boundaries, the edge corpus, fresh hidden rows, shrinking, case literals."""

import datetime as dt
import math
import textwrap
from decimal import Decimal

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.judge import shrink
from aether_mcp.judge.case_literals import read_case_rows
from aether_mcp.judge.edge_inputs import edge_rows, edge_values
from aether_mcp.judge.hidden_inputs import hidden_rows
from aether_mcp.judge.mined_values import mine
from aether_mcp.workspace import UdfArgConfig, UdfConfig, WorkspaceConfig

ORIGINAL = textwrap.dedent(
    '''
    """Module docstring that is not a literal worth mining."""
    import re
    SENIOR_AGE = 65
    RATES = {"gold": 0.10, "silver": 0.05}
    PREFIX = re.compile(r"^mailto:")

    def discount(age, amount, tier):
        """Docstring."""
        if age is not None and age >= SENIOR_AGE and len(tier) > 3:
            return amount * (1 - RATES.get(tier.strip(), 0.0))
        return amount
    '''
)


def config(*types: str) -> WorkspaceConfig:
    args = [UdfArgConfig(name=f"a{i}", type=t) for i, t in enumerate(types)]
    return WorkspaceConfig(udf=UdfConfig(name="f", function="f", kind="row", return_type="double", args=args, source="j.py", source_line=1, form="@udf"))


def test_mining_finds_boundaries_literals_and_their_characters():
    mined = mine(ORIGINAL)
    assert 65 in mined.compared_numbers and 3 in mined.compared_numbers
    assert {0.10, 0.05, 65} <= set(mined.numbers)
    assert {"gold", "silver", "^mailto:", "mailto:"} <= set(mined.strings)
    assert "Docstring." not in mined.strings and not any("Module docstring" in s for s in mined.strings)
    assert set("gold@:") - {"@"} <= set(mined.alphabet)


def test_hidden_rows_probe_the_mined_boundaries_and_literal_perturbations():
    rows = hidden_rows(config("int", "double", "string"), mine(ORIGINAL), 5000, seed=7)
    ages = {row[0] for row in rows}
    assert {64, 65, 66} <= ages
    tiers = {row[2] for row in rows if row[2] is not None}
    assert "gold" in tiers and "GOLD" in tiers
    assert any(t.strip() == "gold" and t != "gold" for t in tiers)
    assert any(t is None for row in rows for t in row)
    amounts = [row[1] for row in rows if row[1] is not None]
    assert any(math.isnan(a) for a in amounts) and any(math.copysign(1, a) < 0 and a == 0 for a in amounts)


def test_hidden_strings_include_long_ones_with_the_structure_the_udf_parses():
    # a port that cuts at a fixed width, or splits once where the original splits everywhere,
    # meets a string over 64 (and over 256) characters that still holds the literals and separators
    email = "def normalize(raw):\n    local, _, domain = raw.partition('@')\n    return local.removeprefix('mailto:') + '@' + domain.lower()\n"
    rows = hidden_rows(config("string"), mine(email), 5000, seed=11)
    long = [row[0] for row in rows if isinstance(row[0], str) and len(row[0]) > 64]
    assert len(long) >= 50 and any(len(text) > 256 for text in long)
    assert sum("@" in text for text in long) >= len(long) // 2
    assert any("mailto:" in text and "@" in text for text in long)


def test_hidden_rows_are_fresh_per_seed_and_reproducible_for_one():
    cfg, mined = config("int", "string"), mine(ORIGINAL)
    assert hidden_rows(cfg, mined, 300, seed=1) == hidden_rows(cfg, mined, 300, seed=1)
    assert hidden_rows(cfg, mined, 300, seed=1) != hidden_rows(cfg, mined, 300, seed=2)


@pytest.mark.parametrize(
    "ddl, value",
    [
        ("int", 2**31 - 1),
        ("tinyint", -128),
        ("double", -0.0),
        ("string", "\u3000"),
        ("string", "e\u0301"),
        ("date", dt.date(2024, 2, 29)),
        ("decimal(5,2)", Decimal("999.99")),
        ("array<string>", []),
    ],
)
def test_edge_corpus_holds_the_classic_edges(ddl, value):
    from aether_mcp.spark_types import parse_type

    values = edge_values(parse_type(ddl))
    assert values[0] is None
    assert any(type(v) is type(value) and repr(v) == repr(value) for v in values)


def test_edge_rows_sweep_one_argument_at_a_time_from_a_test_case():
    rows = edge_rows(config("int", "string"), [[30, "gold"]])
    assert [None, None] in rows
    assert [30, "\t"] in rows and [2**31 - 1, "gold"] in rows


def test_generated_values_fit_their_types():
    cfg = config("tinyint", "decimal(6,2)", "float", "array<int>", "timestamp", "binary", "boolean")
    for row in hidden_rows(cfg, mine(ORIGINAL), 2000, seed=3):
        byte, dec, flt, arr, ts, raw, flag = row
        assert byte is None or -128 <= byte <= 127
        assert dec is None or (abs(dec) < 10**4 and -dec.as_tuple().exponent == 2)
        assert flt is None or math.isnan(flt) or math.isinf(flt) or float(__import__("numpy").float32(flt)) == flt
        assert arr is None or all(v is None or -(2**31) <= v < 2**31 for v in arr)
        assert ts is None or ts.tzinfo is not None
        assert raw is None or isinstance(raw, bytes)
        assert flag in (None, True, False)


def test_shrinking_proposes_only_simpler_values():
    for value in [123.456, -7.048378191431723e-08, 65, "  gold\t", Decimal("12.345"), [1, 2, 3], dt.date(2031, 7, 19)]:
        for simpler in shrink.variants(value):
            assert shrink.complexity(simpler) < shrink.complexity(value)
    assert "gold\t" in shrink.variants(" gold\t")
    assert -0.001 in shrink.variants(-7.048378191431723e-08)


def test_case_rows_are_read_as_data_never_run(tmp_path):
    cases = tmp_path / "cases.py"
    cases.write_text(
        'import math\nfrom decimal import Decimal\nCASES = [\n'
        '  {"args": [1, float("nan"), -0.0, Decimal("1.50"), None], "expected": 1.0},\n'
        '  {"args": [-2, math.inf, 3.5, Decimal("-0.01"), "x"], "raises": "ValueError"},\n]\n'
    )
    rows = read_case_rows(cases)
    assert rows[0][0] == 1 and math.isnan(rows[0][1]) and math.copysign(1, rows[0][2]) == -1 and rows[0][3] == Decimal("1.50")
    assert rows[1][1] == math.inf
    cases.write_text("import os\nCASES = [{'args': [os.getcwd()]}]\n")
    with pytest.raises(ToolError, match="CASES must be written as literal data"):
        read_case_rows(cases)
    assert read_case_rows(tmp_path / "missing.py") == []


DATES = textwrap.dedent(
    '''
    from datetime import datetime

    # rows look like '2015-04-21 16:56:08 UTC'
    def opened_hour(opened, due):
        if opened is None:
            return None
        when = datetime.strptime(due, "%d/%m/%Y")
        return datetime.strptime(opened, "%Y-%m-%d %H:%M:%S UTC").hour + when.day

    JAVA_STYLE = "yyyy-MM-dd'T'HH:mm:ss"
    '''
)


def test_date_formats_are_mined_from_formats_samples_in_comments_java_patterns_and_splits():
    formats = mine(DATES).date_formats
    assert "%d/%m/%Y" in formats  # a strptime format
    assert "%Y-%m-%d %H:%M:%S UTC" in formats  # the sample in the comment (and the format itself)
    assert "%Y-%m-%dT%H:%M:%S" in formats  # the Java pattern
    split_only = "def minutes(time_text):\n    hours, minutes = time_text.split(':')[:2]\n    return int(hours) * 60 + int(minutes)\n"
    assert {"%H:%M:%S", "%Y-%m-%d %H:%M:%S"} <= set(mine(split_only).date_formats)  # a split on ':' of a time: the ISO forms
    assert mine(ORIGINAL).date_formats == []  # a UDF that parses no date gets none
    assert mine('RATE = "%d%%"\ndef f(sku):\n    """Validate a SKU."""\n    return sku.split("-")[0] + RATE\n').date_formats == []  # a percent, and no date word


def test_hidden_strings_of_a_date_parsing_udf_parse_on_boundaries_and_some_nearly_do():
    source = "from datetime import datetime\n\n# e.g. '2015-04-21 16:56:08 UTC'\ndef opened_hour(opened):\n    return datetime.strptime(opened, '%Y-%m-%d %H:%M:%S UTC').hour\n"
    rows = hidden_rows(config("string"), mine(source), 4000, seed=5)
    opened = [row[0] for row in rows if row[0] is not None]
    parsed = []
    for text in opened:
        try:
            parsed.append(dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S UTC"))
        except ValueError:
            pass
    assert len(parsed) >= len(opened) // 4  # random strings would almost never parse
    days = {(p.month, p.day) for p in parsed}
    assert (2, 29) in days and (12, 31) in days and (1, 31) in days  # leap days and month ends
    assert any(p.hour == 0 and p.minute == 0 and p.second == 0 for p in parsed) and any((p.hour, p.minute, p.second) == (23, 59, 59) for p in parsed)
    assert any(" 0:" in text or "-1-" in text for text in opened)  # single-digit parts without their zero, which strptime reads
    near = [text for text in opened if text[:2].isdigit() and "UTC" in text and text not in {p.strftime("%Y-%m-%d %H:%M:%S UTC") for p in parsed}]
    assert any(text.endswith(":61 UTC") or "-13-" in text or " 24:" in text for text in near)  # near misses past a part's range


def test_hidden_strings_of_a_udf_that_extracts_with_a_regex_often_match_it_and_some_nearly_do():
    import re

    source = 'import re\nORDER_RE = re.compile(r"ORD-([0-9]{4,9})\\b")\n\ndef order_number(note):\n    match = ORDER_RE.search(note)\n    return int(match.group(1)) if match else None\n'
    mined = mine(source)
    assert mined.regex_patterns == [r"ORD-([0-9]{4,9})\b"]
    assert mine("import re\ndef f(s):\n    return re.sub(r'(a)\\1', '', s)\n").regex_patterns == []  # a back-reference cannot be drawn
    assert mine("import re\nR = re.compile(r'(?:(?:\\d{1000}){1000}){20}')\n").regex_patterns == []  # nor a match millions of characters long
    assert mine("import re\nR = re.compile(r'ord-\\d+', re.I)\n").regex_patterns == ["(?i)ord-\\d+"]  # flags passed travel with the pattern
    notes = [row[0] for row in hidden_rows(config("string"), mined, 3000, seed=2) if row[0] is not None]
    matching = [text for text in notes if re.search(r"ORD-([0-9]{4,9})\b", text)]
    assert len(matching) >= len(notes) // 6  # random strings would never match (a sixth, whatever the constant chunk holds)
    assert any(text != m.group(0) for text in matching for m in [re.search(r"ORD-[0-9]+", text)] if m)  # inside other words too
    assert any(text.startswith("ORD-") and not re.search(r"ORD-([0-9]{4,9})\b", text) for text in notes)  # and one character off
