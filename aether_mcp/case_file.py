"""Writing cases into tests/cases.py as literal Python that `case_literals` reads back exactly."""

from __future__ import annotations

import ast
import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

HEADER = '"""Behaviour cases: each records what the original returns for its args (as Spark runs it)."""\n'
IMPORTS = {"Decimal": "from decimal import Decimal", "date": "from datetime import date, datetime", "datetime": "from datetime import date, datetime"}


def literal(value: Any, used: set[str]) -> str:
    """Python source for `value`; names it needs (Decimal, date, datetime) are added to `used`."""
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value)
    if isinstance(value, Decimal):
        used.add("Decimal")
        return f'Decimal("{value}")'
    if isinstance(value, dt.datetime):
        used.add("datetime")
        parts = [value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond]
        return f"datetime({', '.join(str(p) for p in parts)})"
    if isinstance(value, dt.date):
        used.add("date")
        return f"date({value.year}, {value.month}, {value.day})"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(item, used) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k, used)}: {literal(v, used)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as a case literal")


def append_cases(path: Path, entries: list[dict[str, Any]]) -> None:
    """Append `entries` ({"args", "expected"|"raises", "why"}) to CASES, adding the imports they need."""
    used: set[str] = set()
    lines = []
    for entry in entries:
        fields = [f'"args": {literal(entry["args"], used)}']
        if "raises" in entry:
            fields.append(f'"raises": {entry["raises"]!r}')
        else:
            fields.append(f'"expected": {literal(entry["expected"], used)}')
        fields.append(f'"why": {entry["why"]!r}')
        lines.append("    {" + ", ".join(fields) + "},\n")
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ToolError(f"tests/cases.py has a syntax error at line {exc.lineno} ({exc.msg}); fix it before recording cases.") from None
    target = next(
        (
            s
            for s in tree.body
            if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CASES" for t in s.targets)
        ),
        None,
    )
    if target is None:
        text = text.rstrip("\n") + "\n\nCASES = [\n" + "".join(lines) + "]\n"
    elif not isinstance(target.value, ast.List):
        raise ToolError("tests/cases.py: CASES is not a list literal, so cases cannot be appended; make it `CASES = [...]`.")
    else:
        rows = text.splitlines(keepends=True)
        offsets = [0]
        for row in rows:
            offsets.append(offsets[-1] + len(row.encode("utf-8")))
        raw = text.encode("utf-8")
        end = offsets[target.value.end_lineno - 1] + target.value.end_col_offset - 1  # the closing bracket
        before = raw[:end].decode("utf-8").rstrip()
        if target.value.elts and not before.endswith((",", "[")):
            before += ","
        text = before + "\n" + "".join(lines) + raw[end:].decode("utf-8")
    text = _with_imports(text, used)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _with_imports(text: str, used: set[str]) -> str:
    tree = ast.parse(text)
    bound = {alias.asname or alias.name for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    needed = sorted({IMPORTS[name] for name in used if name not in bound})
    if not needed:
        return text
    insert_at = 0
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant) and isinstance(tree.body[0].value.value, str):
        insert_at = tree.body[0].end_lineno or 0
    rows = text.splitlines(keepends=True)
    return "".join(rows[:insert_at]) + ("\n" if insert_at else "") + "\n".join(needed) + "\n" + "".join(rows[insert_at:])
