"""Mutants of the original UDF module: small, plausible bugs the tests must notice.

Operators: comparison operators and boundaries (`>=` to `>`, `==` to `!=`, `in` to `not in`),
arithmetic operators, numeric constants +/-1 and 0, string literals emptied or changed,
negated conditions, removed `not`, `and`/`or` swapped, a `return` of None, and an `if` whose
body is removed. Each mutant has a stable id (from what it changes and where), the original
line it touches, and a unified diff. Mutants identical to the original, or to one another,
are dropped: those are the cheap equivalents.
"""

from __future__ import annotations

import ast
import copy
import difflib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from aether_mcp.judge.mined_values import docstring_constants

COMPARE_SWAPS: dict[type, list[type]] = {
    ast.Lt: [ast.LtE, ast.GtE],
    ast.LtE: [ast.Lt, ast.Gt],
    ast.Gt: [ast.GtE, ast.LtE],
    ast.GtE: [ast.Gt, ast.Lt],
    ast.Eq: [ast.NotEq],
    ast.NotEq: [ast.Eq],
    ast.In: [ast.NotIn],
    ast.NotIn: [ast.In],
    ast.Is: [ast.IsNot],
    ast.IsNot: [ast.Is],
}
ARITHMETIC_SWAPS: dict[type, list[type]] = {
    ast.Add: [ast.Sub],
    ast.Sub: [ast.Add],
    ast.Mult: [ast.Div],
    ast.Div: [ast.Mult],
    ast.FloorDiv: [ast.Div],
    ast.Mod: [ast.FloorDiv],
    ast.Pow: [ast.Mult],
}
SYMBOLS = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
    ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
    ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.And: "and", ast.Or: "or",
}


@dataclass
class Mutant:
    mutant_id: str
    operator: str
    line: int
    description: str
    source: str
    diff: str


def generate_mutants(source: str) -> list[Mutant]:
    """Every mutant of `source`, in source order, without duplicates or copies of the original."""
    original_tree = ast.parse(source)
    baseline = ast.unparse(original_tree)
    sites = _sites(original_tree)
    mutants: list[Mutant] = []
    seen = {baseline}
    for site_index, (operator, line, description, _) in enumerate(sites):
        tree = ast.parse(source)
        apply = _sites(tree)[site_index][3]
        apply()
        try:
            mutated = ast.unparse(ast.fix_missing_locations(tree))
            compile(mutated, "<mutant>", "exec")
        except (SyntaxError, ValueError):
            continue
        if mutated in seen:
            continue
        seen.add(mutated)
        digest = hashlib.sha256(f"{operator}|{line}|{description}|{mutated}".encode()).hexdigest()[:10]
        diff = "".join(difflib.unified_diff((baseline + "\n").splitlines(keepends=True), (mutated + "\n").splitlines(keepends=True), "original", f"mutant m-{digest}", n=1))
        mutants.append(Mutant(f"m-{digest}", operator, line, description, mutated, diff))
    return mutants


def _sites(tree: ast.Module) -> list[tuple[str, int, str, Callable[[], None]]]:
    """Mutation sites in a deterministic order: (operator, line, description, apply)."""
    docstrings = docstring_constants(tree)
    sites: list[tuple[str, int, str, Callable[[], None]]] = []
    for node in _ordered(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                for replacement in COMPARE_SWAPS.get(type(op), []):
                    sites.append(("comparison", line, f"{SYMBOLS[type(op)]} -> {SYMBOLS[replacement]}", _set_list_item(node.ops, index, replacement)))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            for replacement in ARITHMETIC_SWAPS.get(type(node.op), []):
                sites.append(("arithmetic", line, f"{SYMBOLS[type(node.op)]} -> {SYMBOLS[replacement]}", _set_attr(node, "op", replacement)))
        elif isinstance(node, ast.BoolOp):
            swapped = ast.Or if isinstance(node.op, ast.And) else ast.And
            sites.append(("boolean", line, f"{SYMBOLS[type(node.op)]} -> {SYMBOLS[swapped]}", _set_attr(node, "op", swapped)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            sites.append(("negation", line, "not x -> x", _drop_not(node)))
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            sites.extend(_constant_sites(node, line))
        elif isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            sites.append(("return_none", line, "return ... -> return None", _set_value(node, ast.Constant(None))))
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            sites.append(("negation", line, "condition -> not condition", _negate_test(node)))
        if isinstance(node, ast.If):
            sites.append(("remove_if", line, "if body removed", _remove_body(node)))
    return sites


def _constant_sites(node: ast.Constant, line: int) -> list[tuple[str, int, str, Callable[[], None]]]:
    value = node.value
    sites = []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for replacement in dict.fromkeys([value + 1, value - 1, 0 if value != 0 else 1]):
            replacement = type(value)(replacement)
            sites.append(("constant", line, f"{value!r} -> {replacement!r}", _set_constant(node, replacement)))
    elif isinstance(value, str):
        for replacement in ("" if value else "x", value + "_"):
            if replacement != value:
                sites.append(("string", line, f"{value!r} -> {replacement!r}", _set_constant(node, replacement)))
    return sites


def _ordered(tree: ast.AST):
    """Nodes in source order (ast.walk is breadth-first; ids must not depend on tree shape quirks)."""
    yield tree
    for child in ast.iter_child_nodes(tree):
        yield from _ordered(child)


def _set_list_item(items: list, index: int, replacement: type) -> Callable[[], None]:
    def apply() -> None:
        items[index] = replacement()

    return apply


def _set_attr(node: ast.AST, attribute: str, replacement: type) -> Callable[[], None]:
    def apply() -> None:
        setattr(node, attribute, replacement())

    return apply


def _set_constant(node: ast.Constant, value) -> Callable[[], None]:
    def apply() -> None:
        node.value = value

    return apply


def _set_value(node: ast.Return, value: ast.expr) -> Callable[[], None]:
    def apply() -> None:
        node.value = value

    return apply


def _drop_not(node: ast.UnaryOp) -> Callable[[], None]:
    def apply() -> None:
        # `not x` becomes `not not x`: the truth value of x, without needing the parent node.
        node.operand = ast.UnaryOp(ast.Not(), node.operand)

    return apply


def _negate_test(node: ast.If | ast.While | ast.IfExp) -> Callable[[], None]:
    def apply() -> None:
        node.test = ast.UnaryOp(ast.Not(), copy.deepcopy(node.test))

    return apply


def _remove_body(node: ast.If) -> Callable[[], None]:
    def apply() -> None:
        node.body = [ast.Pass()]

    return apply
