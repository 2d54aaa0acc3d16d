"""Shrinking: simpler argument values that keep a mismatch, so a counterexample reads at a glance.

`variants` proposes replacements for one value, simplest first; `complexity` orders rows. The
search itself (which variants still mismatch) is the caller's: it needs both workers.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

from aether_mcp.wire.value_codec import Struct

MAX_STRING_DELETIONS = 48


def complexity(value: Any) -> int:
    """A size for ordering counterexamples: shorter, rounder, more ASCII is simpler."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return len(str(abs(value))) + (value < 0)
    if isinstance(value, float):
        return 2 if math.isnan(value) or math.isinf(value) else len(repr(value))
    if isinstance(value, Decimal):
        return len(value.as_tuple().digits) + (value < 0)
    if isinstance(value, str):
        return len(value) + 2 * sum(1 for ch in value if not ch.isascii() or not ch.isprintable())
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, dt.datetime):
        return len(str(abs((value.replace(tzinfo=None) - dt.datetime(1970, 1, 1)).total_seconds())))
    if isinstance(value, dt.date):
        return len(str(abs(value.toordinal() - dt.date(1970, 1, 1).toordinal())))
    if isinstance(value, list):
        return 1 + sum(complexity(item) for item in value)
    if isinstance(value, dict):
        return 1 + sum(complexity(key) + complexity(item) for key, item in value.items())
    return 10


def row_complexity(row: list[Any]) -> int:
    return sum(complexity(value) for value in row)


def variants(value: Any) -> list[Any]:
    """Simpler values to try in place of `value` (each strictly simpler by `complexity`)."""
    found: list[Any] = []
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        found = [0, 1, -1, value // 10, int(str(value)[:2]) if len(str(abs(value))) > 2 else value]
        if abs(value) > 10:
            magnitude = 10 ** (len(str(abs(value))) - 1)
            found += [magnitude * (1 if value > 0 else -1), value - value % magnitude]
    elif isinstance(value, float):
        if math.isfinite(value):
            found = [0.0, 1.0, -1.0, float(round(value))] + [round(value, digits) for digits in range(0, 4)]
            found += [value / 2, math.trunc(value) + 0.5] + [math.copysign(10.0**k, value) for k in range(-3, 4)]
    elif isinstance(value, Decimal):
        exponent = value.as_tuple().exponent
        if isinstance(exponent, int):
            found = [value.quantize(Decimal(1).scaleb(e)) for e in range(exponent + 1, 1) if e <= 0]
            found += [Decimal(0).quantize(Decimal(1).scaleb(exponent)) if exponent < 0 else Decimal(0)]
    elif isinstance(value, str):
        if len(value) <= MAX_STRING_DELETIONS:
            found = [value[:i] + value[i + 1 :] for i in range(len(value))]
        else:
            half = len(value) // 2
            found = [value[:half], value[half:]]
        found += [value.strip(), "".join(ch for ch in value if ch.isascii())]
    elif isinstance(value, (bytes, bytearray)):
        found = [value[:i] + value[i + 1 :] for i in range(min(len(value), MAX_STRING_DELETIONS))]
    elif isinstance(value, dt.datetime):
        found = [value.replace(microsecond=0), value.replace(second=0, microsecond=0), value.replace(hour=0, minute=0, second=0, microsecond=0)]
    elif isinstance(value, dt.date):
        found = [value.replace(day=1), value.replace(month=1, day=1)]
    elif isinstance(value, list):
        found = [value[:i] + value[i + 1 :] for i in range(len(value))]
        for index, item in enumerate(value):
            found += [value[:index] + [simpler] + value[index + 1 :] for simpler in variants(item)[:3]]
    elif isinstance(value, Struct):
        # A struct keeps its fields: each one simpler, or null.
        for name, item in value.items():
            found += [Struct({**value, name: simpler}) for simpler in ([None] if item is not None else []) + variants(item)[:3]]
    elif isinstance(value, dict):
        # A map loses entries, or keeps them with simpler values.
        found = [{k: v for k, v in value.items() if k is not key} for key in value]
        for key, item in value.items():
            found += [{**value, key: simpler} for simpler in variants(item)[:3]]
    limit = complexity(value)
    unique: list[Any] = []
    for candidate in found:
        if complexity(candidate) < limit and not any(_same(candidate, seen) for seen in unique):
            unique.append(candidate)
    return sorted(unique, key=complexity)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)
