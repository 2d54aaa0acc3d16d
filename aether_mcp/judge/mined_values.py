"""Values mined from the original UDF's source, where its behaviour changes.

Every numeric constant (a comparison boundary, a rate, a cap), every string literal (a lookup
key, a prefix, a separator) and the characters those literals are made of. Hidden inputs are
built around them: `age >= 65` is probed at 64, 65, 66 and 65 +/- epsilon; `tier == "gold"` with
"GOLD", " gold", "gold\\t" and "gold\\u00a0". Date formats it parses, spells or shows by example
become date strings (date_strings); the patterns it gives `re` become strings they match (regex_strings).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

from aether_mcp.judge.date_strings import mine_formats
from aether_mcp.judge.regex_strings import mine_patterns

# Characters that are regex syntax rather than text, dropped when a literal is used as a pattern.
_REGEX_SYNTAX = re.compile(r"\\[AbBdDsSwWZ]|[\^\$\*\+\?\{\}\[\]\(\)\|]")


@dataclass
class MinedValues:
    numbers: list[float | int] = field(default_factory=list)
    compared_numbers: list[float | int] = field(default_factory=list)
    strings: list[str] = field(default_factory=list)
    alphabet: str = ""
    lengths: list[int] = field(default_factory=list)
    date_formats: list[str] = field(default_factory=list)  # strftime formats of the dates the source parses (date_strings)
    regex_patterns: list[str] = field(default_factory=list)  # patterns the source passes to re, drawn from (regex_strings)


def mine(source: str) -> MinedValues:
    """The constants and literals of a module, docstrings excluded, in first-seen order."""
    tree = ast.parse(source)
    docstrings = docstring_constants(tree)
    numbers: dict[float | int, None] = {}
    compared: dict[float | int, None] = {}
    strings: dict[str, None] = {}
    constant_names = _numeric_module_constants(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in docstrings:
            value = node.value
            if isinstance(value, bool):
                continue
            if isinstance(value, (int, float)):
                numbers[value] = None
                numbers[-value] = None
            elif isinstance(value, str) and len(value) <= 200:
                strings[value] = None
                plain = _REGEX_SYNTAX.sub("", value)
                if plain and plain != value:
                    strings[plain] = None
        elif isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                for value in _numbers_in(side, constant_names):
                    compared[value] = None
    alphabet = "".join(sorted({ch for text in strings for ch in text}))
    lengths = sorted({len(text) for text in strings} | {int(v) for v in compared if isinstance(v, int) and 0 <= v <= 64})
    return MinedValues(
        numbers=[v for v in numbers if _finite(v)],
        compared_numbers=[v for v in compared if _finite(v)],
        strings=list(strings),
        alphabet=alphabet,
        lengths=lengths,
        date_formats=mine_formats(source),
        regex_patterns=mine_patterns(source),
    )


def boundary_values(value: float | int) -> list[float | int]:
    """The value and its neighbours on both sides: +/-1, +/-0.5, and the adjacent doubles."""
    result: list[float | int] = [value, value - 1, value + 1]
    as_float = float(value)
    result += [as_float, math.nextafter(as_float, -math.inf), math.nextafter(as_float, math.inf), as_float - 0.5, as_float + 0.5]
    return result


def _numbers_in(node: ast.AST, constant_names: dict[str, float | int]) -> list[float | int]:
    found: list[float | int] = []
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, (int, float)) and not isinstance(child.value, bool):
            found.append(child.value)
        elif isinstance(child, ast.Name) and child.id in constant_names:
            found.append(constant_names[child.id])
    return found


def _numeric_module_constants(tree: ast.Module) -> dict[str, float | int]:
    constants: dict[str, float | int] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
            value = statement.value.value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        constants[target.id] = value
    return constants


def docstring_constants(tree: ast.Module) -> set[int]:
    """ids of the Constant nodes that are docstrings (of the module, functions and classes)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _finite(value: float | int) -> bool:
    return not isinstance(value, float) or math.isfinite(value)
