"""What a comparison's rows hold, for its evidence: how long their strings are, whether an output says anything."""

from __future__ import annotations

import math
from typing import Any


def longest_string(row: list[Any]) -> int:
    """The length of the longest string among a row's arguments (inside arrays, maps and structs too)."""
    longest = 0
    stack = list(row)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            longest = max(longest, len(value))
        elif isinstance(value, dict):
            stack += list(value.keys()) + list(value.values())
        elif isinstance(value, (list, tuple)):
            stack += list(value)
    return longest


def has_value(output: Any) -> bool:
    """An output that tells one implementation from another: not null, NaN, an empty string or an empty collection."""
    if output is None or (isinstance(output, float) and math.isnan(output)):
        return False
    return not (isinstance(output, (str, bytes, list, tuple, dict)) and len(output) == 0)
