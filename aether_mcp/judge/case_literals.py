"""Read `CASES` from a workspace's tests/cases.py without running it.

The server never imports agent code, so the file is evaluated as data: literals, lists, dicts,
tuples, unary minus, and the few constructors test values need (`float("nan")`,
`Decimal("1.50")`, `date(2024, 2, 29)`, `datetime(...)`, also as `datetime.date(...)`).
Also the original's own literals (`source_literals`), which a candidate may spell without having them from the cases.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

_CONSTRUCTORS = {
    "float": float,
    "Decimal": Decimal,
    "date": dt.date,
    "datetime": dt.datetime,
    "bytes": bytes,
}
_NAMES = {"None": None, "True": True, "False": False, "nan": math.nan, "inf": math.inf}


class NotALiteral(ValueError):
    def __init__(self, node: ast.AST) -> None:
        super().__init__(f"line {getattr(node, 'lineno', '?')}: {ast.unparse(node)[:80]!r} is not a literal value")


def read_case_rows(path: Path) -> list[list[Any]]:
    """The `args` of every case in CASES (an empty list when the file or CASES is absent)."""
    return [case["args"] for case in read_cases(path)]


def read_cases(path: Path) -> list[dict[str, Any]]:
    """Every case in CASES as written (args, expected or raises, why), read without running the file."""
    if not path.exists():
        return []
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise ToolError(f"tests/cases.py cannot be parsed ({exc}); fix it (run_tests shows the same error) and try again.") from exc
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CASES" for t in statement.targets):
            try:
                cases = literal(statement.value)
            except NotALiteral as exc:
                raise ToolError(
                    f"tests/cases.py: CASES must be written as literal data so it can be read without running it ({exc}). "
                    "Write values directly (None, 1.5, float(\"nan\"), Decimal(\"1.50\"), date(2024, 2, 29), ...)."
                ) from exc
            found = []
            for index, case in enumerate(cases if isinstance(cases, list) else []):
                if not (isinstance(case, dict) and isinstance(case.get("args"), list)):
                    raise ToolError(f"tests/cases.py: case {index} must be a dict with an 'args' list, e.g. {{\"args\": [1.0], \"expected\": 2.0}}.")
                found.append(case)
            return found
    return []


def literal(node: ast.AST) -> Any:
    """The value of a literal expression; NotALiteral for anything that would need running code."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List):
        return [literal(item) for item in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(literal(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise NotALiteral(node)
        return {literal(key): literal(value) for key, value in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = literal(node.operand)
        if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in _NAMES:
        return _NAMES[node.attr]
    if isinstance(node, ast.Call) and not node.keywords:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name in _CONSTRUCTORS:
            try:
                return _CONSTRUCTORS[name](*[literal(arg) for arg in node.args])
            except (TypeError, ValueError, ArithmeticError) as exc:
                raise NotALiteral(node) from exc
    raise NotALiteral(node)


# What Python's float() and int() accept besides digits: an original that converts text relies on these words and signs,
# so a candidate that spells them has them from that grammar, not from the test cases.
NUMBER_GRAMMAR = {
    "float": {"inf", "infinity", "nan", "e", "+", "-", ".", "_", "+inf", "-inf", "+infinity", "-infinity", "+nan", "-nan"},
    "int": {"+", "-", "_", "0x", "0o", "0b"},
}


# Calls whose string arguments are sets or patterns of characters: a character in one is the original's own.
CHARACTER_SETS = {
    "sub", "subn", "compile", "match", "search", "fullmatch", "findall", "finditer", "split", "rsplit", "replace", "translate",
    "maketrans", "strip", "lstrip", "rstrip", "removeprefix", "removesuffix", "partition", "rpartition",
}  # fmt: skip


def source_literals(source: str) -> set[Any]:
    """Every numeric and string constant in a module (docstrings included: they are the original's own text), the characters
    of the strings it gives a pattern or character-set call (a character its `re.sub(r"[$,]", ...)` deletes is its own),
    and the number grammar of the float()/int() conversions it calls."""
    found: set[Any] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
            found.add(node.value)
            if isinstance(node.value, (int, float)):
                found.add(-node.value)
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if name in NUMBER_GRAMMAR:
                words = NUMBER_GRAMMAR[name]
                found |= words | {w.upper() for w in words} | {w.title() for w in words}
            if name in CHARACTER_SETS:
                found |= {ch for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str) for ch in arg.value}
    return found
