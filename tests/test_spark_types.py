"""Spark DDL type names parse without a JVM and come back in canonical form."""

import pytest
from pyspark.sql import types as T

from aether_mcp.spark_types import UnknownSparkType, parse_type, type_name


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("double", "double"),
        ("INT", "int"),
        ("integer", "int"),
        ("long", "bigint"),
        ("string", "string"),
        ("varchar(20)", "string"),
        ("decimal(10,2)", "decimal(10,2)"),
        ("decimal", "decimal(10,0)"),
        ("timestamp_ntz", "timestamp_ntz"),
        ("array<string>", "array<string>"),
        ("map<string, array<double>>", "map<string,array<double>>"),
        ("struct<lat:double, lon:double>", "struct<lat:double,lon:double>"),
    ],
)
def test_type_names_parse_to_their_canonical_form(text, canonical):
    assert type_name(parse_type(text)) == canonical


def test_parsed_types_are_real_pyspark_types():
    parsed = parse_type("array<decimal(12,3)>")
    assert parsed == T.ArrayType(T.DecimalType(12, 3), True)


@pytest.mark.parametrize("text", ["dubble", "array<", "decimal(40,2)", "map<string>", "int int", ""])
def test_unknown_or_malformed_types_are_refused_with_the_known_list(text):
    with pytest.raises(UnknownSparkType, match="known types: boolean"):
        parse_type(text)
