"""Where the original raises: features of argument values that predict a raise, learned from evaluated rows.

A comparison needs rows on which the original returns: a row the original raises on only shows
that the candidate fails too. When too few generated rows returned, byte_compare learns here
which simple features of an argument (null, NaN, a sign, a magnitude, an empty or blank string,
an empty array or map, a struct or map holding a null) the original raises on nearly always, and draws more rows without them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from aether_mcp.wire.value_codec import Raised

MIN_SUPPORT = 10  # rows with a feature before it can be learned
RAISE_SHARE = 0.95  # a feature is avoided when the original raised on at least this share of its rows
MARGIN = 0.2  # ... and this much more often than on the rows without it


def features(value: Any) -> list[str]:
    """The simple, nameable features of one argument value."""
    if value is None:
        return ["null"]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, float):
        if math.isnan(value):
            return ["NaN"]
        if math.isinf(value):
            return ["infinite"]
        return _number(value) + ([] if value.is_integer() else ["with a fraction"])
    if isinstance(value, (int, Decimal)):
        if isinstance(value, Decimal) and not value.is_finite():
            return ["NaN"]
        return _number(value) + ([] if isinstance(value, int) or value == value.to_integral_value() else ["with a fraction"])
    if isinstance(value, str):
        found = ["empty"] if value == "" else ["blank"] if not value.strip() else []
        if not value.isascii():
            found.append("non-ASCII")
        if value and not any(ch.isdigit() for ch in value):
            found.append("without digits")
        if value and not any(ch.isalpha() for ch in value):
            found.append("without letters")
        return found
    if isinstance(value, (list, tuple)):
        return ["empty"] if not value else ["holding a null"] if any(item is None for item in value) else []
    if isinstance(value, dict):  # a struct's fields or a map's values
        return ["empty"] if not value else ["holding a null"] if any(item is None for item in value.values()) else []
    return []


def _number(value: Any) -> list[str]:
    if value < 0:
        found = ["negative"]
    elif value == 0:
        found = ["zero"]
    else:
        found = ["positive"]
    magnitude = abs(value)
    if magnitude >= 1e6:
        found.append("of magnitude 1e6 or more")
    elif magnitude < 1:
        found.append("of magnitude below 1")
    return found


@dataclass(frozen=True)
class Learned:
    position: int
    feature: str
    raised: int
    rows: int

    def describe(self, names: list[str]) -> str:
        return f"{names[self.position]} {self.feature}: the original raised on {self.raised} of {self.rows} such rows"


class RaiseRegions:
    """The (argument, feature) pairs on which the original (nearly) always raised in `rows`."""

    def __init__(self, rows: list[list[Any]], outputs: list[Any]) -> None:
        counts: dict[tuple[int, str], list[int]] = {}
        total_raised = sum(1 for output in outputs if isinstance(output, Raised))
        for row, output in zip(rows, outputs):
            raised = isinstance(output, Raised)
            for position, value in enumerate(row):
                for feature in set(features(value)):
                    entry = counts.setdefault((position, feature), [0, 0])
                    entry[0] += raised
                    entry[1] += 1
        self.learned: list[Learned] = []
        for (position, feature), (raised, seen) in sorted(counts.items()):
            others, others_raised = len(rows) - seen, total_raised - raised
            if seen < MIN_SUPPORT or raised < RAISE_SHARE * seen:
                continue
            if others and others_raised / others > raised / seen - MARGIN:
                continue  # the original raises about as often without the feature: it does not explain the raises
            self.learned.append(Learned(position, feature, raised, seen))

    def allows(self, row: list[Any]) -> bool:
        """True when the row has none of the learned features."""
        return not any(learned.feature in features(row[learned.position]) for learned in self.learned)

    def describe(self, names: list[str]) -> list[str]:
        return [learned.describe(names) for learned in self.learned]
