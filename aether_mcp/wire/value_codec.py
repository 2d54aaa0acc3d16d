"""Exact, code-free encoding of UDF argument rows and outputs as JSON.

Values cross process boundaries (test process <-> Spark worker <-> server) in this form and
never as pickles, so a process that reads them cannot be made to run code. Every value comes
back exactly: NaN, +/-inf and -0.0 survive, ints keep full precision, and types that JSON
lacks (bytes, Decimal, date, datetime, maps, structs) are tagged.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


class Struct(dict):
    """A struct value: field name -> value, in field order.

    A dict, so it compares, prints and is written into cases.py as one; the type says that it is a
    struct and not a map, which a decoded value cannot say otherwise. `nested_values.as_udf_argument`
    turns it into the pyspark Row that Spark hands a Python UDF.
    """

    __slots__ = ()


@dataclass(frozen=True)
class Raised:
    """In place of an output: evaluating the target on this row raised `type` with `message`."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


_AS_IS = frozenset((type(None), bool, str, int, float))  # exactly these types: JSON holds them as they are


def encode(value: Any) -> Any:
    """A JSON-serialisable form of `value` that `decode` turns back into an equal value."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is list:  # a row, or a column of outputs: most items are plain
        return [item if type(item) in _AS_IS else encode(item) for item in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$t": "bytes", "v": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Decimal):
        return {"$t": "decimal", "v": str(value)}
    if isinstance(value, dt.datetime):
        return {"$t": "datetime", "v": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$t": "date", "v": value.isoformat()}
    if isinstance(value, Raised):
        return {"$t": "raised", "type": value.type, "message": value.message}
    fields = getattr(value, "__fields__", None)
    if isinstance(value, tuple) and fields is not None:  # pyspark Row: a struct value
        return {"$t": "struct", "v": [[name, encode(item)] for name, item in zip(fields, value)]}
    if isinstance(value, Struct):
        return {"$t": "struct", "v": [[name, encode(item)] for name, item in value.items()]}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {"$t": "map", "v": [[encode(k), encode(v)] for k, v in value.items()]}
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # NumPy scalars and arrays
        return encode(value.tolist())
    raise TypeError(f"cannot encode a value of type {type(value).__name__}: {value!r}")


def decode(value: Any) -> Any:
    """The value `encode` encoded; structs come back as `Struct`s (dicts in field order), maps as dicts."""
    if isinstance(value, list):
        return [item if type(item) in _AS_IS else decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    tag = value.get("$t")
    if tag == "bytes":
        return base64.b64decode(value["v"])
    if tag == "decimal":
        return Decimal(value["v"])
    if tag == "datetime":
        return dt.datetime.fromisoformat(value["v"])
    if tag == "date":
        return dt.date.fromisoformat(value["v"])
    if tag == "raised":
        return Raised(value["type"], value["message"])
    if tag == "struct":
        return Struct((name, decode(item)) for name, item in value["v"])
    if tag == "map":
        return {_hashable(decode(k)): decode(v) for k, v in value["v"]}
    raise ValueError(f"unknown encoded value {value!r}")


def dumps(value: Any) -> str:
    """Encode and serialise; the result round-trips through `loads`."""
    return json.dumps(encode(value), allow_nan=True, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    return decode(json.loads(text))


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(_hashable(item) for item in key)
    if isinstance(key, dict):
        return tuple(key.items())
    return key
