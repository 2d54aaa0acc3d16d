"""What the translator knows of a value: the Column code that computes it, its Python type, and where it raises.

A value is pure: evaluating its code never fails a row. Where the Python it comes from raises
(a None operand, a zero divisor, a missing key), the value carries a guard: a condition and the
exception, checked in order before the value is used. A statement hoists its guards into the
result's CASE chain at its own place, so a draft fails on exactly the rows, and at the point,
where the original raises, and nowhere else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

# Python types a value can have, as the translator tracks them.
KINDS = ("int", "float", "str", "bool", "none", "match", "date", "datetime", "wall")  # wall: a naive datetime strptime parsed (a timestamp_ntz)

# Spark DDL types of arguments and results, and the Python type a UDF sees or returns for each.
SPARK_KINDS = {
    "bigint": "int", "int": "int", "smallint": "int", "tinyint": "int", "long": "int", "integer": "int",
    "double": "float", "float": "float", "real": "float",
    "string": "str",
    "boolean": "bool",
    "date": "date", "timestamp": "datetime",
}  # fmt: skip


class Refused(Exception):
    """A construct outside the subset: what it is, its line, and what the agent can do."""

    def __init__(self, construct: str, line: int, what_to_do: str = "write that part by hand in the candidate") -> None:
        super().__init__(f"line {line}: {construct}")
        self.construct = construct
        self.line = line
        self.what_to_do = what_to_do


@dataclass(frozen=True)
class Guard:
    condition: str  # Column code, true where the value raises
    message: str  # the exception, as "TypeError: ..."
    narrows: str | None = None  # a name known not to be None once the guard has passed


@dataclass(frozen=True)
class Value:
    code: str
    kind: str
    nullable: bool = False
    guards: tuple[Guard, ...] = ()
    const: object = field(default=None)
    is_const: bool = False
    name: str | None = None  # the local name the value is bound to, for narrowing

    def pure(self) -> Value:
        return replace(self, guards=())


LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
PAST_64_BITS = "_int_past_64_bits()"


def py_literal(value: object) -> str:
    """Python source for a literal value: a non-finite float spelled as float('inf'), containers element by element."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "(" + "".join(f"{py_literal(v)}, " for v in value) + ")"
    return repr(value)


def lit_code(value: object) -> str:
    if value is None:
        return "F.lit(None)"
    if isinstance(value, int) and not isinstance(value, bool):
        if not LONG_MIN <= value <= LONG_MAX:
            return PAST_64_BITS  # fine folded away (10**400 * 0.0), refused if it reaches the draft
        return f"F.lit({value}).cast('long')"  # a bigint, as every int the draft computes: two small literals must not add in 32 bits
    return f"F.lit({py_literal(value)})"


def kind_of(value: object) -> str | None:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return None


def constant(value: object, line: int) -> Value:
    kind = kind_of(value)
    if kind is None:
        raise Refused(f"the constant {value!r} ({type(value).__name__})", line)
    code = lit_code(value)
    if code == PAST_64_BITS:
        code = f"_int_past_64_bits({line})"
    return Value(code, kind, nullable=value is None, const=value, is_const=True)


def both(*codes: str) -> str:
    """The conjunction of non-null boolean Column codes (None stands for true)."""
    parts = [c for c in codes if c is not None and c != "F.lit(True)"]
    if not parts:
        return "F.lit(True)"
    return "(" + " & ".join(f"({p})" for p in parts) + ")" if len(parts) > 1 else parts[0]


def negate(code: str) -> str:
    return f"~({code})"


def within(guards: tuple[Guard, ...], condition: str) -> tuple[Guard, ...]:
    """Guards of a part evaluated only where `condition` holds."""
    return tuple(Guard(both(condition, g.condition), g.message, None) for g in guards)
