"""Argument rows as JSON: how clients write them, and how the tools hand them back.

JSON has no NaN, infinity, decimal, date or bytes, so: floats may be "NaN", "Infinity",
"-Infinity" (and -0.0 as a number or "-0.0"); decimals are numbers or strings ("1.50");
dates are "YYYY-MM-DD"; timestamps are ISO 8601 ("2024-02-29T12:00:00", naive means the session
time zone); binary is {"hex": "00ff"}; arrays are JSON arrays. Values are converted by the
UDF's declared argument types.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal, InvalidOperation
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pyspark.sql import types as T

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
    """Aware datetimes (nested in lists too) as naive wall time in `zone`, the form Spark gives a Python UDF."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(zone).replace(tzinfo=None)
    if isinstance(value, list):
        return [session_naive(item, zone) for item in value]
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
        return "Write a JSON array."
    return f"Write a JSON {'boolean' if isinstance(data_type, T.BooleanType) else 'integer' if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)) else 'string'} or null."


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
    return value
