"""Argument rows as JSON: how clients write them, and how the tools hand them back.

JSON has no NaN, infinity, decimal, date or bytes, so: floats may be "NaN", "Infinity",
"-Infinity" (and -0.0 as a number or "-0.0"); decimals are numbers or strings ("1.50");
dates are "YYYY-MM-DD"; timestamps are ISO 8601 ("2024-02-29T12:00:00", naive means the session
time zone); binary is {"hex": "00ff"}; arrays are JSON arrays; structs are JSON objects keyed by
field name (a missing field is null); maps are JSON objects when their keys are strings, else
(and also then) lists of [key, value] pairs. Values are converted by the UDF's declared argument
types, at every depth.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.lazy_import import lazy_module
from aether_mcp.wire.value_codec import Struct

T = lazy_module("pyspark.sql.types")

FLOAT_WORDS = {"nan": math.nan, "infinity": math.inf, "+infinity": math.inf, "-infinity": -math.inf, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}


def from_json_row(row: Any, types: list[T.DataType], names: list[str], index: int) -> list[Any]:
    """A client's JSON row as typed Python values, or a ToolError naming the row, argument and format."""
    if not isinstance(row, list):
        raise ToolError(f"input {index} must be a list of {len(types)} argument values in UDF order ({', '.join(names)}), got {type(row).__name__}.")
    if len(row) != len(types):
        raise ToolError(f"input {index} has {len(row)} values but the UDF takes {len(types)} ({', '.join(names)}).")
    return [_convert(value, data_type, f"input {index}, argument {name!r} ({data_type.simpleString()})") for value, data_type, name in zip(row, types, names)]


def to_json_row(row: list[Any]) -> list[Any]:
    """Typed values as JSON that `from_json_row` turns back into the same values."""
    return [_to_json(value) for value in row]


def session_naive(value: Any, zone: dt.tzinfo) -> Any:
    """Aware datetimes (nested in lists, structs and maps too) as naive wall time in `zone`, the form Spark gives a Python UDF."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(zone).replace(tzinfo=None)
    if isinstance(value, list):
        return [session_naive(item, zone) for item in value]
    if isinstance(value, dict):
        return type(value)((session_naive(key, zone), session_naive(item, zone)) for key, item in value.items())
    return value


def _convert(value: Any, data_type: T.DataType, where: str) -> Any:
    if value is None:
        return None
    try:
        if isinstance(data_type, T.BooleanType):
            if isinstance(value, bool):
                return value
        elif isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
        elif isinstance(data_type, (T.DoubleType, T.FloatType)):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            if isinstance(value, str) and value.strip().lower() in FLOAT_WORDS:
                return FLOAT_WORDS[value.strip().lower()]
        elif isinstance(data_type, T.DecimalType):
            if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                return Decimal(str(value))
        elif isinstance(data_type, T.StringType):
            if isinstance(value, str):
                return value
        elif isinstance(data_type, T.BinaryType):
            if isinstance(value, dict) and isinstance(value.get("hex"), str):
                return bytes.fromhex(value["hex"])
        elif isinstance(data_type, T.DateType):
            if isinstance(value, str):
                return dt.date.fromisoformat(value)
        elif isinstance(data_type, T.TimestampType):
            if isinstance(value, str):
                return dt.datetime.fromisoformat(value)
        elif isinstance(data_type, T.ArrayType):
            if isinstance(value, list):
                return [_convert(item, data_type.elementType, f"{where}[{i}]") for i, item in enumerate(value)]
        elif isinstance(data_type, T.StructType):
            if isinstance(value, dict):
                return _struct(value, data_type, where)
        elif isinstance(data_type, T.MapType):
            return _map(value, data_type, where)
    except (ValueError, InvalidOperation) as exc:
        raise ToolError(f"{where}: {value!r} cannot be read ({exc}). {_format_hint(data_type)}") from None
    raise ToolError(f"{where}: {value!r} is not a value of that type. {_format_hint(data_type)}")


def _format_hint(data_type: T.DataType) -> str:
    if isinstance(data_type, (T.DoubleType, T.FloatType)):
        return 'Write a number, or "NaN", "Infinity", "-Infinity", "-0.0".'
    if isinstance(data_type, T.DecimalType):
        return 'Write a number or a string such as "1.50".'
    if isinstance(data_type, T.DateType):
        return 'Write "YYYY-MM-DD".'
    if isinstance(data_type, T.TimestampType):
        return 'Write ISO 8601, e.g. "2024-02-29T12:00:00" (naive means the session time zone).'
    if isinstance(data_type, T.BinaryType):
        return 'Write {"hex": "00ff"}.'
    if isinstance(data_type, T.ArrayType):
        return f"Write a JSON array of {data_type.elementType.simpleString()} values, or null."
    if isinstance(data_type, T.StructType):
        example = ", ".join(f'"{name}": ...' for name in data_type.names[:3])
        return f"Write a JSON object keyed by field name ({{{example}}}; a missing field is null), or null."
    if isinstance(data_type, T.MapType):
        if isinstance(data_type.keyType, T.StringType):
            return 'Write a JSON object ({"key": value, ...}) or a list of [key, value] pairs, or null.'
        return f"Write a list of [key, value] pairs ([[{_example_key(data_type.keyType)}, ...], ...]; keys are {data_type.keyType.simpleString()} and never null), or null."
    return f"Write a JSON {'boolean' if isinstance(data_type, T.BooleanType) else 'integer' if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)) else 'string'} or null."


def _struct(value: dict, data_type: T.StructType, where: str) -> Struct:
    unknown = [key for key in value if key not in data_type.names]
    if unknown:
        raise ToolError(f"{where}: {unknown[0]!r} is not a field of {data_type.simpleString()} (fields: {', '.join(data_type.names)}). {_format_hint(data_type)}")
    return Struct((field.name, _convert(value.get(field.name), field.dataType, f"{where}, field {field.name!r}")) for field in data_type.fields)


def _map(value: Any, data_type: T.MapType, where: str) -> dict:
    if isinstance(value, dict) and isinstance(data_type.keyType, T.StringType):
        pairs = list(value.items())
    elif isinstance(value, list) and all(isinstance(pair, list) and len(pair) == 2 for pair in value):
        pairs = [(key, item) for key, item in value]
    else:
        raise ToolError(f"{where}: {value!r} is not a value of that type. {_format_hint(data_type)}")
    converted: dict = {}
    for index, (key, item) in enumerate(pairs):
        if key is None:
            raise ToolError(f"{where}: entry {index} has a null key; Spark map keys are never null. {_format_hint(data_type)}")
        key = _convert(key, data_type.keyType, f"{where}, key {index}")
        if isinstance(key, float) and key != key:
            raise ToolError(f"{where}: entry {index} has a NaN key, which these tools do not generate or compare as a map key; use another key.")
        if key in converted:
            raise ToolError(f"{where}: the key {key!r} appears twice; Spark refuses duplicate map keys.")
        converted[key] = _convert(item, data_type.valueType, f"{where}[{key!r}]")
    return converted


def _example_key(data_type: T.DataType) -> str:
    return "1" if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)) else '"..."'


def _to_json(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value == 0 and math.copysign(1.0, value) < 0:
            return "-0.0"
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, list):
        return [_to_json(item) for item in value]
    if isinstance(value, Struct) or (isinstance(value, dict) and all(isinstance(key, str) for key in value)):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, dict):
        return [[_to_json(key), _to_json(item)] for key, item in value.items()]
    return value
