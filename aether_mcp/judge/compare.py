"""The comparator: exact, null-, NaN- and signed-zero-aware equality of UDF outputs.

Policy (DESIGN.md): null matches only null, NaN only NaN, +0.0 and -0.0 are distinct,
infinities keep their sign, floats are compared bit for bit unless a tolerance in ULPs is
declared, and types must match (an int never equals a float). Arrays compare element by element,
structs field by field and maps key by key (in any order), by the same rules at every depth. `classify` names the kind of the
first difference; `difference` gives it in words; both return None for identical values. Given the Spark type of the
values, ULP distances (and tolerances) are counted in that type's ULPs: a `float` column's in single precision.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from aether_mcp.lazy_import import lazy_module
from aether_mcp.wire.value_codec import Raised, Struct, dumps

T = lazy_module("pyspark.sql.types")

RAISE_KIND = "original raised, candidate returned"
_PLAIN_SCALARS = frozenset((int, bool, str, float))
KINDS = ("value", "null vs value", "NaN", "sign of zero", "type", "exception", "length", "keys", RAISE_KIND)


@dataclass(frozen=True)
class Difference:
    """The first difference between two values: its kind, a sentence, and the ULP distance for floats."""

    kind: str
    detail: str
    ulp: int | None = None

    def __str__(self) -> str:
        return self.detail


def identical(expected: Any, actual: Any, ulp_tolerance: int = 0) -> bool:
    """True when the two values are the same under the comparison policy."""
    return classify(expected, actual, ulp_tolerance) is None


def difference(expected: Any, actual: Any, ulp_tolerance: int = 0) -> str | None:
    """How `actual` differs from `expected` (the first difference, with its position), or None."""
    found = classify(expected, actual, ulp_tolerance)
    return None if found is None else found.detail


def classify(expected: Any, actual: Any, ulp_tolerance: int = 0, path: str = "", data_type: T.DataType | None = None) -> Difference | None:
    """The first difference between `expected` and `actual`, or None when they are the same.

    `data_type` is the values' Spark type when known; without it floats are counted as doubles.
    """
    # The common case first: two equal scalars of one plain type. Equal floats other than zero have
    # the same bits (zeros go on, for their sign; NaN is never equal to itself).
    kind = type(expected)
    if kind is type(actual) and kind in _PLAIN_SCALARS and expected == actual and (kind is not float or expected != 0.0):
        return None
    where = f" at {path}" if path else ""
    if isinstance(expected, Raised) or isinstance(actual, Raised):
        if isinstance(expected, Raised) and isinstance(actual, Raised) and expected.type == actual.type:
            return None
        return Difference("exception", f"exception{where}: expected {_show(expected)}, got {_show(actual)}")
    if expected is None or actual is None:
        if expected is None and actual is None:
            return None
        return Difference("null vs value", f"null vs value{where}: expected {_show(expected)}, got {_show(actual)}")
    if _kind(expected) != _kind(actual):
        return Difference("type", f"type{where}: expected {_kind(expected)} {_show(expected)}, got {_kind(actual)} {_show(actual)}")
    if isinstance(expected, float):
        return _float_difference(expected, actual, where, ulp_tolerance, single=isinstance(data_type, T.FloatType))
    if isinstance(expected, Decimal):
        # Decimal('1.0') == Decimal('1.00') numerically, but Spark's scale is part of the value.
        if expected.as_tuple() == actual.as_tuple():
            return None
        return Difference("value", f"value{where}: expected {_show(expected)}, got {_show(actual)}")
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            return Difference("length", f"length{where}: expected {len(expected)} elements, got {len(actual)}")
        for index, (e, a) in enumerate(zip(expected, actual)):
            found = classify(e, a, ulp_tolerance, f"{path}[{index}]", data_type.elementType if isinstance(data_type, T.ArrayType) else None)
            if found:
                return found
        return None
    if isinstance(expected, dict):
        return _dict_difference(expected, actual, ulp_tolerance, path, where, data_type)
    if expected == actual:
        return None
    return Difference("value", f"value{where}: expected {_show(expected)}, got {_show(actual)}")


def _dict_difference(expected: dict, actual: dict, ulp_tolerance: int, path: str, where: str, data_type: T.DataType | None) -> Difference | None:
    """A map (keys in any order) or a struct (field names in field order), value by value under the same rules.

    Map keys are matched exactly, as the codec writes them: 0.0 and -0.0, 1 and True are different keys.
    """
    if isinstance(expected, Struct) and isinstance(actual, Struct) and list(expected) != list(actual):
        return Difference("keys", f"keys{where}: expected the fields {list(expected)}, got {list(actual)}")
    expected_keys = {dumps(key): key for key in expected}
    actual_keys = {dumps(key): key for key in actual}
    if set(expected_keys) != set(actual_keys):
        return Difference("keys", f"keys{where}: expected {sorted(map(repr, expected))}, got {sorted(map(repr, actual))}")
    for token, key in expected_keys.items():
        found = classify(expected[key], actual[actual_keys[token]], ulp_tolerance, f"{path}[{key!r}]", _value_type(data_type, key))
        if found:
            return found
    return None


def _value_type(data_type: T.DataType | None, key: Any) -> T.DataType | None:
    """The type of a map's values, or of the struct field named `key`."""
    if isinstance(data_type, T.MapType):
        return data_type.valueType
    if isinstance(data_type, T.StructType):
        return next((field.dataType for field in data_type.fields if field.name == key), None)
    return None


def ulp_distance(a: float, b: float, single: bool = False) -> int:
    """How many representable doubles (floats, when `single`) lie between a and b (0 when bit-identical)."""
    return abs(_ordered_bits(a, single) - _ordered_bits(b, single))


def _float_difference(expected: float, actual: float, where: str, ulp_tolerance: int, single: bool = False) -> Difference | None:
    if math.isnan(expected) or math.isnan(actual):
        if math.isnan(expected) and math.isnan(actual):
            return None
        return Difference("NaN", f"NaN{where}: expected {_show(expected)}, got {_show(actual)}")
    if expected == actual:
        if math.copysign(1.0, expected) != math.copysign(1.0, actual):
            return Difference("sign of zero", f"sign of zero{where}: expected {_show(expected)}, got {_show(actual)}")
        return None
    if math.isinf(expected) or math.isinf(actual):
        return Difference("value", f"value{where}: expected {_show(expected)}, got {_show(actual)}")
    if single and not (_is_single(expected) and _is_single(actual)):
        single = False  # a value a float column cannot hold: count in doubles rather than round it away
    distance = ulp_distance(expected, actual, single)
    if distance <= ulp_tolerance:
        return None
    unit = "float32 ULP" if single else "ULP"
    return Difference("value", f"value{where}: expected {_show(expected)}, got {_show(actual)} ({distance} {unit} apart)", distance)


def _is_single(value: float) -> bool:
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0] == value
    except OverflowError:
        return False


def _ordered_bits(value: float, single: bool = False) -> int:
    if single:
        bits = struct.unpack("<i", struct.pack("<f", value))[0]
        return bits if bits >= 0 else -(bits & 0x7FFFFFFF)
    bits = struct.unpack("<q", struct.pack("<d", value))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"  # a Struct is a dict too: a case written as a dict literal matches it
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    return type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
