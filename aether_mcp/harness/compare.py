"""The comparator: exact, null-, NaN- and signed-zero-aware equality of UDF outputs.

Policy (DESIGN.md): null matches only null, NaN only NaN, +0.0 and -0.0 are distinct,
infinities keep their sign, floats are compared bit for bit, and types must match (an int
never equals a float). `difference(expected, actual)` says in words how two values differ,
or returns None when they are identical under this policy.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal
from typing import Any

from aether_mcp.harness.value_codec import Raised


def identical(expected: Any, actual: Any) -> bool:
    """True when the two values are the same under the comparison policy."""
    return difference(expected, actual) is None


def difference(expected: Any, actual: Any, path: str = "") -> str | None:
    """How `actual` differs from `expected` (the first difference, with its position), or None."""
    where = f" at {path}" if path else ""
    if isinstance(expected, Raised) or isinstance(actual, Raised):
        if isinstance(expected, Raised) and isinstance(actual, Raised) and expected.type == actual.type:
            return None
        return f"exception{where}: expected {_show(expected)}, got {_show(actual)}"
    if expected is None or actual is None:
        if expected is None and actual is None:
            return None
        return f"null vs value{where}: expected {_show(expected)}, got {_show(actual)}"
    if _kind(expected) != _kind(actual):
        return f"type{where}: expected {_kind(expected)} {_show(expected)}, got {_kind(actual)} {_show(actual)}"
    if isinstance(expected, float):
        return _float_difference(expected, actual, where)
    if isinstance(expected, Decimal):
        # Decimal('1.0') == Decimal('1.00') numerically, but Spark's scale is part of the value.
        if expected.as_tuple() == actual.as_tuple():
            return None
        return f"value{where}: expected {_show(expected)}, got {_show(actual)}"
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            return f"length{where}: expected {len(expected)} elements, got {len(actual)}"
        for index, (e, a) in enumerate(zip(expected, actual)):
            found = difference(e, a, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(expected, dict):
        if set(expected) != set(actual):
            return f"keys{where}: expected {sorted(map(repr, expected))}, got {sorted(map(repr, actual))}"
        for key in expected:
            found = difference(expected[key], actual[key], f"{path}[{key!r}]")
            if found:
                return found
        return None
    if expected == actual:
        return None
    return f"value{where}: expected {_show(expected)}, got {_show(actual)}"


def ulp_distance(a: float, b: float) -> int:
    """How many representable doubles lie between a and b (0 when bit-identical)."""
    return abs(_ordered_bits(a) - _ordered_bits(b))


def _float_difference(expected: float, actual: float, where: str) -> str | None:
    if math.isnan(expected) or math.isnan(actual):
        if math.isnan(expected) and math.isnan(actual):
            return None
        return f"NaN{where}: expected {_show(expected)}, got {_show(actual)}"
    if expected == actual:
        if math.copysign(1.0, expected) != math.copysign(1.0, actual):
            return f"sign of zero{where}: expected {_show(expected)}, got {_show(actual)}"
        return None
    if math.isinf(expected) or math.isinf(actual):
        return f"value{where}: expected {_show(expected)}, got {_show(actual)}"
    return f"value{where}: expected {_show(expected)}, got {_show(actual)} ({ulp_distance(expected, actual)} ULP apart)"


def _ordered_bits(value: float) -> int:
    bits = struct.unpack("<q", struct.pack("<d", value))[0]
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, tuple):
        return "list"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    return type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
