"""Hidden inputs: rows generated in the server from a fresh secret seed on every call.

Rows come in chunks, each with a profile (mixed, mostly-null, constant, mined, wide), and every
value is drawn from one of several sources: values mined from the original (boundaries with
their neighbours, string literals with case, whitespace and Unicode perturbations, strings
built from the literals' characters and lengths), a distribution for the type (uniform,
heavy-tailed, cents and rounding ties, special floats, random bit patterns) or the edge corpus.
"""

from __future__ import annotations

import datetime as dt
import random
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from aether_mcp.judge.date_strings import date_string
from aether_mcp.judge.edge_inputs import _float32, edge_values, map_keys
from aether_mcp.judge.mined_values import MinedValues, boundary_values
from aether_mcp.judge.regex_strings import matching_string
from aether_mcp.lazy_import import lazy_module
from aether_mcp.spark_types import integer_bounds, parse_type
from aether_mcp.wire.value_codec import Struct
from aether_mcp.workspace import WorkspaceConfig

T = lazy_module("pyspark.sql.types")

PROFILES = ("mixed", "mostly_null", "constant", "mined", "wide")
CHUNK_ROWS = 500
MIN_CHUNK_ROWS = 50
WHITESPACE = [" ", "\t", "\n", "\u00a0", "\u3000", "\u2003", "\x1c", "\r", "\u200b"]
COMBINING = ["\u0301", "\u0308", "\u0327"]
SCRIPTS = "abcXYZ019_-.@+:/ \u00e9\u00df\u0130\u0131\u03a3\u03c3\u0416\u0661\u0662\u4e2d\uff21\U0001f642"
WORDS = ["a", "ann", "x1", "Bob", "test", "0", "1.5", "été"]
LONG_LENGTHS = (65, 100, 180, 257, 300, 400)  # targets for long structured strings (over 64 and over 256 characters)
CASE_CHANGES: list[Callable[[str], str]] = [str.upper, str.lower, str.title, str.swapcase, str.capitalize]


def hidden_rows(config: WorkspaceConfig, mined: MinedValues, count: int, seed: int) -> list[list[Any]]:
    """`count` rows for the UDF's arguments, reproducible only from `seed`."""
    rng = random.Random(seed)
    generators = [_Literals(arg.values, rng) if arg.values else _ValueSource(parse_type(arg.type), mined, rng) for arg in config.udf.args]
    rows: list[list[Any]] = []
    chunk = 0
    # every profile at least twice, however few rows are asked for (a thousand rows once met only three of them)
    chunk_rows = max(MIN_CHUNK_ROWS, min(CHUNK_ROWS, count // (2 * len(PROFILES))))
    while len(rows) < count:
        profile = PROFILES[chunk % len(PROFILES)]
        size = min(chunk_rows, count - len(rows))
        constant_position = rng.randrange(len(generators))
        constant_value = generators[constant_position].draw("mined")
        for _ in range(size):
            row = []
            for position, source in enumerate(generators):
                if profile == "constant" and position == constant_position:
                    row.append(constant_value)
                else:
                    row.append(source.draw(profile))
            rows.append(row)
        chunk += 1
    rng.shuffle(rows)
    return rows


def literal_compositions(mined: MinedValues, limit: int = 1500) -> list[str]:
    """Every `literal + word + separator + literal` (and shorter forms) from the mined literals, in order.

    Deterministic and exhaustive over small sets, so a structure like "mailto:" + "ann" + "@" +
    "gmail.com" is always among them.
    """
    literals = sorted({s for s in mined.strings if s and len(s) <= 40})[:12]
    separators = [ch for ch in mined.alphabet if not ch.isalnum() and not ch.isspace()][:6] + [""]
    found: dict[str, None] = {}
    for first in [""] + literals:
        for word in WORDS[:3]:
            for separator in separators:
                for last in literals + [""]:
                    found[first + word + separator + last] = None
                    if len(found) >= limit:
                        return list(found)
    return list(found)


class _Literals:
    """An argument the job passes only as literals: just those values, never null."""

    def __init__(self, values: list[Any], rng: random.Random) -> None:
        self.values, self.rng = values, rng

    def draw(self, profile: str) -> Any:
        return self.rng.choice(self.values)


def _kind(data_type: T.DataType, integral: bool) -> str | None:
    """Which of `_ValueSource.value`'s draws a type takes."""
    for kind, types in (("array", T.ArrayType), ("struct", T.StructType), ("map", T.MapType), ("boolean", T.BooleanType)):
        if isinstance(data_type, types):
            return kind
    if integral:
        return "integer"
    for kind, types in (("float", T.FloatType), ("double", T.DoubleType), ("decimal", T.DecimalType), ("string", T.StringType), ("binary", T.BinaryType), ("date", T.DateType), ("timestamp", T.TimestampType)):
        if isinstance(data_type, types):
            return kind
    return None


class _ValueSource:
    def __init__(self, data_type: T.DataType, mined: MinedValues, rng: random.Random) -> None:
        self.type = data_type
        self.mined = mined
        self.rng = rng
        self.edges = edge_values(data_type)[1:]
        # Nested types draw each element, field, key and value from a source of its own type.
        self.children: list[_ValueSource] = []
        if isinstance(data_type, T.ArrayType):
            self.children = [_ValueSource(data_type.elementType, mined, rng)]
        elif isinstance(data_type, T.StructType):
            self.children = [_ValueSource(field.dataType, mined, rng) for field in data_type.fields]
        elif isinstance(data_type, T.MapType):
            self.children = [_ValueSource(data_type.keyType, mined, rng), _ValueSource(data_type.valueType, mined, rng)]
        # what `value` draws, decided once here rather than for every value
        self.bounds = integer_bounds().get(type(data_type))
        self.kind = _kind(data_type, self.bounds is not None)

    def draw(self, profile: str) -> Any:
        rng = self.rng
        null_rate = {"mostly_null": 0.8, "wide": 0.02}.get(profile, 0.05)
        if rng.random() < null_rate:
            return None
        roll = rng.random()
        if profile == "mined":
            source = "mined" if roll < 0.8 else "distribution"
        elif profile == "wide":
            source = "distribution" if roll < 0.9 else "edge"
        else:
            source = "mined" if roll < 0.4 else ("distribution" if roll < 0.9 else "edge")
        if source == "edge" and self.edges:
            return rng.choice(self.edges)
        return self.value(mined=source == "mined")

    def value(self, mined: bool) -> Any:
        data_type, kind = self.type, self.kind
        if kind == "array":
            return [self.children[0].draw("mixed") for _ in range(self.rng.choice([0, 1, 1, 2, 3, 5]))]
        if kind == "struct":
            return Struct((field.name, source.draw("mixed")) for field, source in zip(data_type.fields, self.children))
        if kind == "map":
            keys, values = self.children
            drawn = map_keys([keys.value(mined) for _ in range(self.rng.choice([0, 1, 1, 2, 3, 5]))])
            return {key: values.draw("mixed") for key in drawn}
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "integer":
            return self._integer(self.bounds, mined)
        if kind == "double":
            return self._double(mined)
        if kind == "float":
            return _float32(self._double(mined))
        if kind == "decimal":
            return self._decimal(data_type, mined)
        if kind == "string":
            return self._string(mined)
        if kind == "binary":
            return self._string(mined).encode("utf-8", errors="surrogatepass")[:64]
        if kind == "date":
            return self._date(mined)
        if kind == "timestamp":
            return self._timestamp(mined)
        return None

    # --- numbers ---------------------------------------------------------------------------

    def _mined_number(self) -> float | int | None:
        pool = self.mined.compared_numbers or self.mined.numbers
        if not pool:
            return None
        base = self.rng.choice(pool)
        if base in self.mined.compared_numbers or self.rng.random() < 0.5:
            return self.rng.choice(boundary_values(base))
        return base

    def _integer(self, bounds: tuple[int, int], mined: bool) -> int:
        low, high = bounds
        rng = self.rng
        candidate: Any = self._mined_number() if mined else None
        if candidate is None:
            roll = rng.random()
            if roll < 0.5:
                candidate = rng.randint(-20, 150)
            elif roll < 0.85:
                candidate = rng.choice([-1, 1]) * int(10 ** rng.uniform(0, 19))
            else:
                candidate = rng.randint(low, high)
        candidate = int(candidate) if not isinstance(candidate, int) else candidate
        return max(low, min(high, candidate))

    def _double(self, mined: bool) -> float:
        rng = self.rng
        if mined:
            candidate = self._mined_number()
            if candidate is not None:
                return float(candidate)
        roll = rng.random()
        if roll < 0.3:
            return rng.uniform(-1000.0, 1000.0)
        if roll < 0.5:
            return round(rng.uniform(-1000.0, 1000.0), 2)
        if roll < 0.6:
            return rng.randint(-100000, 100000) / 1000 + 0.0005 * rng.choice([-1, 1])
        if roll < 0.8:
            return rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(-12, 22)
        if roll < 0.9:
            return float(rng.randint(-100, 100))
        if roll < 0.97:
            return rng.choice([0.0, -0.0, float("nan"), float("inf"), float("-inf"), 5e-324, -5e-324])
        return struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]

    def _decimal(self, data_type: T.DecimalType, mined: bool) -> Decimal:
        rng = self.rng
        unit = Decimal(1).scaleb(-data_type.scale)
        largest = 10**data_type.precision - 1
        if mined:
            candidate = self._mined_number()
            if candidate is not None:
                try:
                    value = Decimal(repr(candidate)).quantize(unit)
                    if abs(value.scaleb(data_type.scale)) <= largest:
                        return value
                except ArithmeticError:
                    pass
        digits = rng.choice([1, 2, 3, data_type.precision])
        magnitude = min(largest, 10**digits - 1)
        return Decimal(rng.randint(-magnitude, magnitude)).scaleb(-data_type.scale)

    # --- strings ---------------------------------------------------------------------------

    def _string(self, mined: bool) -> str:
        rng = self.rng
        if self.mined.date_formats and rng.random() < (0.75 if mined else 0.4):
            return date_string(self.mined.date_formats, rng)
        if self.mined.regex_patterns and rng.random() < (0.5 if mined else 0.25):
            return matching_string(self.mined.regex_patterns, rng)
        literals = [s for s in self.mined.strings if s]
        if mined and literals:
            roll = rng.random()
            if roll < 0.15:
                return rng.choice(literals)  # as the source spells it: the key a lookup or a comparison hits
            if roll < 0.45:
                return self._perturbed(rng.choice(literals))
            if roll < 0.55:
                return self._long(literals)
            if roll < 0.8:
                # Literals composed with short words and the separators the literals use, so that
                # e.g. "mailto:" + "ann" + "@" + "gmail.com" comes up, not only the pieces alone.
                separators = [ch for ch in self.mined.alphabet if not ch.isalnum()] + ["", " "]
                pieces = [rng.choice(literals) if rng.random() < 0.6 else rng.choice(WORDS) for _ in range(rng.randint(2, 4))]
                return "".join(piece + rng.choice(separators) for piece in pieces[:-1]) + pieces[-1]
            alphabet = self.mined.alphabet or SCRIPTS
            length = rng.choice(self.mined.lengths or [0, 1, 5]) + rng.choice([-1, 0, 0, 1])
            return "".join(rng.choice(alphabet) for _ in range(max(0, length)))
        roll = rng.random()
        if roll < 0.4:
            return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(0, 12)))
        if roll < 0.7:
            return "".join(rng.choice(SCRIPTS) for _ in range(rng.randint(0, 10)))
        if roll < 0.85:
            return self._perturbed(rng.choice(["gold", "Gold", "x", "test", "123"]))
        return rng.choice(["", " ", "0", "-1", "1e5", "3.14", "\u0661\u0662", "NULL"])

    def _long(self, literals: list[str]) -> str:
        """A string of a few hundred characters with the structure the UDF parses: the literals and
        long words joined by the separators the literals use, so a port that cuts at a fixed width
        (or splits once where the original splits everywhere) meets a value it gets wrong."""
        rng = self.rng
        target = rng.choice(LONG_LENGTHS)
        separators = [ch for ch in self.mined.alphabet if not ch.isalnum() and not ch.isspace()] or [" ", ""]
        parts: list[str] = []
        while sum(len(part) for part in parts) < target:
            word = rng.choice(literals) if rng.random() < 0.4 else rng.choice(WORDS) * rng.randint(1, 24)
            parts += [word, rng.choice(separators)]
        return "".join(parts[:-1])

    def _perturbed(self, text: str) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.2:
            return text
        if roll < 0.4:
            return rng.choice(CASE_CHANGES)(text)
        if roll < 0.65:
            space = rng.choice(WHITESPACE)
            return rng.choice([space + text, text + space, space + text + space])
        if roll < 0.75 and text:
            position = rng.randrange(len(text)) + 1
            return text[:position] + rng.choice(COMBINING) + text[position:]
        if roll < 0.85 and text:
            return text.replace("i", "\u0130", 1) if "i" in text else text.replace(text[0], text[0] * 2, 1)
        if roll < 0.95 and len(text) > 1:
            return text[: rng.randrange(1, len(text))] if rng.random() < 0.5 else text[rng.randrange(1, len(text)) :]
        return text + rng.choice(["1", "x", ".", "!"])

    # --- dates -----------------------------------------------------------------------------

    def _date(self, mined: bool) -> dt.date:
        rng = self.rng
        if rng.random() < 0.7:
            return dt.date(1900, 1, 1) + dt.timedelta(days=rng.randint(0, 200 * 366))
        return dt.date.fromordinal(rng.randint(1, dt.date(9999, 12, 31).toordinal()))

    def _timestamp(self, mined: bool) -> dt.datetime:
        rng = self.rng
        base = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        if rng.random() < 0.8:
            return base + dt.timedelta(microseconds=rng.randint(-(2**41), 2**41))
        return base + dt.timedelta(seconds=rng.randint(-62_000_000_000, 250_000_000_000), microseconds=rng.randint(0, 999_999))
