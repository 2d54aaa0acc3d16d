"""The edge corpus: values at the edges of each argument's Spark type, swept one argument at a time.

Nulls, empties, zeros and -0.0, NaN and infinities, the type's min and max, tiny and huge
magnitudes, rounding ties, leap days and epoch edges, decimal scale edges, empty and
single-element arrays, structs whose fields are all null and each field at its edges, empty maps
and maps with null values and edge keys, and the Unicode and whitespace oddities that separate
Python's string rules from Spark's (tabs, NBSP, U+3000, U+001C, combining marks, non-ASCII digits).
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any

from aether_mcp.lazy_import import lazy_module
from aether_mcp.spark_types import integer_bounds, parse_type
from aether_mcp.wire.value_codec import Struct
from aether_mcp.workspace import WorkspaceConfig

T = lazy_module("pyspark.sql.types")

DOUBLE_EDGES = [
    0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1.0, -1.0, 0.5, -0.5, 0.1, 0.30000000000000004,
    2.675, 0.125, 1.005, 0.49999999999999994, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300,
    1.7976931348623157e308, -1.7976931348623157e308, 1e16, 12345678901234567.0, 9007199254740993.0, 1e21, -123.456,
]
STRING_EDGES = [
    "", " ", "\t", "\n", "a", "A", " a ", "\ta\t", "\u00a0a\u00a0", "\u3000", "a\u3000", "\x1c", "a\x1c", "\u2003a",
    "e\u0301", "\u00e9", "\u0661\u0662\u0663", "\uff11\uff12", "\u00df", "\u0130", "\u0131", "\u01c5", "\U0001f642",
    "\u200b", "\u200fa", "a\r\n", "0", "-0", "1e5", "NaN", "null", "None", "true", "x" * 1000,
]
DATE_EDGES = [
    dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(2000, 2, 29), dt.date(2024, 2, 29), dt.date(1900, 3, 1),
    dt.date(1582, 10, 15), dt.date(1582, 10, 4), dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2038, 1, 19),
]
_UTC = dt.UTC
TIMESTAMP_EDGES = [
    dt.datetime(1970, 1, 1, tzinfo=_UTC), dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=_UTC),
    dt.datetime(2038, 1, 19, 3, 14, 7, tzinfo=_UTC), dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=_UTC),
    dt.datetime(2024, 2, 29, 12, 0, tzinfo=_UTC), dt.datetime(2024, 3, 31, 1, 0, tzinfo=_UTC),
    dt.datetime(2024, 10, 27, 1, 0, tzinfo=_UTC), dt.datetime(1900, 1, 1, tzinfo=_UTC),
    dt.datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=_UTC), dt.datetime(1, 1, 2, tzinfo=_UTC),
]


def edge_values(data_type: T.DataType) -> list[Any]:
    """Edge values of a Spark type, null first."""
    values: list[Any] = [None]
    if isinstance(data_type, T.BooleanType):
        values += [True, False]
    elif type(data_type) in integer_bounds():
        low, high = integer_bounds()[type(data_type)]
        values += [0, 1, -1, 2, 10, -10, 100, low, high, low + 1, high - 1]
        if high > 2**31:
            values += [2**31 - 1, 2**31, -(2**31) - 1, 2**53 + 1]
    elif isinstance(data_type, T.DoubleType):
        values += DOUBLE_EDGES
    elif isinstance(data_type, T.FloatType):
        values += sorted({_float32(v) for v in DOUBLE_EDGES if v == v}, key=repr) + [float("nan")]
    elif isinstance(data_type, T.DecimalType):
        values += decimal_edges(data_type)
    elif isinstance(data_type, T.StringType):
        values += STRING_EDGES
    elif isinstance(data_type, T.BinaryType):
        values += [b"", b"\x00", b"\xff\xff\xff\xff", b"abc", bytes(range(32))]
    elif isinstance(data_type, T.DateType):
        values += DATE_EDGES
    elif isinstance(data_type, T.TimestampType):
        values += TIMESTAMP_EDGES
    elif isinstance(data_type, T.ArrayType):
        element = [v for v in edge_values(data_type.elementType)]
        values += [[], [None]] + [[v] for v in element[1:]] + [element[1:4], element[1:] * 2]
    elif isinstance(data_type, T.StructType):
        values += struct_edges(data_type)
    elif isinstance(data_type, T.MapType):
        values += map_edges(data_type)
    return values


def struct_edges(data_type: T.StructType) -> list[Struct]:
    """Every field null (not the same as a null struct), then each field swept through its edges with the others typical."""
    typical = Struct((field.name, _typical(field.dataType)) for field in data_type.fields)
    edges = [Struct((field.name, None) for field in data_type.fields), typical]
    for field in data_type.fields:
        for value in edge_values(field.dataType):
            edges.append(Struct({**typical, field.name: value}))
    return edges


def map_edges(data_type: T.MapType) -> list[dict]:
    """The empty map, a null value, each key edge and each value edge alone, and several entries at once."""
    keys = map_keys(edge_values(data_type.keyType))
    values = edge_values(data_type.valueType)
    key, value = _typical(data_type.keyType), _typical(data_type.valueType)
    edges: list[dict] = [{}, {key: None}]
    edges += [{k: value} for k in keys]
    edges += [{key: v} for v in values[1:]]
    edges.append(dict(zip(keys, values[1:] * (len(keys) // max(1, len(values) - 1) + 1))))
    return edges


def map_keys(values: list[Any]) -> list[Any]:
    """The values that can be map keys, each once: Spark keys are never null; NaN and -0.0 are left out
    (a dict cannot hold NaN once, nor 0.0 and -0.0 apart)."""
    found: dict[str, Any] = {}
    for value in values:
        if value is None or (isinstance(value, float) and (value != value or (value == 0 and str(value).startswith("-")))):
            continue
        found.setdefault(repr(value) + type(value).__name__, value)
    return list(found.values())


def decimal_edges(data_type: T.DecimalType) -> list[Decimal]:
    precision, scale = data_type.precision, data_type.scale
    unit = Decimal(1).scaleb(-scale)
    largest = (Decimal(10) ** precision - 1).scaleb(-scale)
    edges = [Decimal(0).quantize(unit), unit, -unit, largest, -largest, Decimal(1).quantize(unit) if precision > scale else unit]
    if scale >= 1:
        edges += [Decimal(5).scaleb(-scale), Decimal(-5).scaleb(-scale)]
    if precision - scale >= 2:
        edges += [Decimal("12.5").quantize(unit), Decimal("-0.5").quantize(unit)]
    return edges


def edge_rows(config: WorkspaceConfig, base_rows: list[list[Any]]) -> list[list[Any]]:
    """Each argument swept through its edge values with the others held at a base row."""
    types = [parse_type(arg.type) for arg in config.udf.args]
    # An argument the job passes only as literals is swept through those values alone.
    literals = {position: arg.values for position, arg in enumerate(config.udf.args) if arg.values}
    bases = [list(row) for row in base_rows[:2] if len(row) == len(types)] or [[_typical(t) for t in types]]
    for base in bases:
        for position, values in literals.items():
            if base[position] not in values:
                base[position] = values[0]
    rows: list[list[Any]] = [[literals[p][0] if p in literals else None for p in range(len(types))]]
    for base in bases:
        for position, data_type in enumerate(types):
            for value in literals.get(position) or edge_values(data_type):
                row = list(base)
                row[position] = value
                rows.append(row)
    return rows


def _typical(data_type: T.DataType) -> Any:
    if isinstance(data_type, (T.DoubleType, T.FloatType)):
        return 1.0
    if isinstance(data_type, T.StringType):
        return "a"
    if isinstance(data_type, T.ArrayType):
        return [_typical(data_type.elementType)]
    if isinstance(data_type, T.StructType):
        return Struct((field.name, _typical(field.dataType)) for field in data_type.fields)
    if isinstance(data_type, T.MapType):
        return {_typical(data_type.keyType): _typical(data_type.valueType)}
    values = edge_values(data_type)
    return values[2] if len(values) > 2 else values[-1]


def _float32(value: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")
