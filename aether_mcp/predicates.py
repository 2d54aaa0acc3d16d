"""Predicates over a UDF's arguments, written as small Python expressions and evaluated without running code.

`amount is not None and abs(amount) > 1e15`, `tier is None or tier.strip() == ""`,
`isnan(lat) or lat > 90`. Only names of the UDF's arguments, literals, comparisons, boolean and
arithmetic operators, and a short list of pure functions and string methods are allowed; the
expression is interpreted here, never compiled or executed. A predicate that fails on a row
(comparing None with a number, say) does not apply to that row.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

FUNCTIONS = {
    "abs": abs,
    "len": len,
    "min": min,
    "max": max,
    "round": round,
    "isnan": lambda v: isinstance(v, float) and math.isnan(v),
    "isinf": lambda v: isinstance(v, float) and math.isinf(v),
    "isfinite": lambda v: isinstance(v, (int, float)) and math.isfinite(v),
}
METHODS = {"strip", "lower", "upper", "startswith", "endswith", "isspace", "isascii", "isdigit", "isalpha"}
COMPARISONS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv, ast.Mod: operator.mod, ast.FloorDiv: operator.floordiv}


class Predicate:
    def __init__(self, text: str, arg_names: list[str]) -> None:
        self.text = text
        self.arg_names = arg_names
        try:
            self.tree = ast.parse(text, mode="eval").body
        except SyntaxError as exc:
            raise ToolError(f"applies_to is not a valid expression ({exc.msg}); write e.g. \"amount is not None and abs(amount) > 1e15\".") from None
        self._check(self.tree)

    def __call__(self, row: list[Any]) -> bool:
        try:
            return bool(self._eval(self.tree, dict(zip(self.arg_names, row))))
        except Exception:  # a predicate that cannot be evaluated on a row does not apply to it
            return False

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            if node.id not in self.arg_names and node.id not in ("None", "True", "False"):
                raise ToolError(f"applies_to uses {node.id!r}; only the UDF's arguments ({', '.join(self.arg_names)}) can be named.")
            return
        if isinstance(node, ast.Call):
            func = node.func
            allowed = (isinstance(func, ast.Name) and func.id in FUNCTIONS) or (isinstance(func, ast.Attribute) and func.attr in METHODS)
            if not allowed or node.keywords:
                raise ToolError(
                    f"applies_to calls {ast.unparse(func)!r}; allowed: {', '.join(sorted(FUNCTIONS))} and the string methods {', '.join(sorted(METHODS))}."
                )
            if isinstance(func, ast.Attribute):
                self._check(func.value)
            for arg in node.args:
                self._check(arg)
            return
        allowed_nodes = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Compare, ast.Constant, ast.Tuple, ast.List, ast.Load)
        if not isinstance(node, allowed_nodes) and type(node) not in COMPARISONS and type(node) not in ARITHMETIC:
            raise ToolError(f"applies_to may not use {type(node).__name__} ({ast.unparse(node)[:40]!r}); use comparisons, and/or/not, arithmetic and literals.")
        for child in ast.iter_child_nodes(node):
            self._check(child)

    def _eval(self, node: ast.AST, names: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return {"None": None, "True": True, "False": False}.get(node.id, names.get(node.id))
        if isinstance(node, (ast.Tuple, ast.List)):
            return [self._eval(item, names) for item in node.elts]
        if isinstance(node, ast.BoolOp):
            values = (self._eval(item, names) for item in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, names)
            return not value if isinstance(node.op, ast.Not) else (-value if isinstance(node.op, ast.USub) else +value)
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, names), self._eval(node.right, names)
            if not isinstance(node.op, ast.Add) and any(isinstance(v, (str, bytes, list)) for v in (left, right)):
                raise TypeError("only + applies to strings")  # no repetition or %-formatting: they can build huge values
            return ARITHMETIC[type(node.op)](left, right)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, names)
            for op, comparator in zip(node.ops, node.comparators):
                right = self._eval(comparator, names)
                if not COMPARISONS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            args = [self._eval(arg, names) for arg in node.args]
            if isinstance(node.func, ast.Name):
                return FUNCTIONS[node.func.id](*args)
            target = self._eval(node.func.value, names)
            if not isinstance(target, str):
                raise TypeError("string methods apply to strings only")
            return getattr(target, node.func.attr)(*args)
        raise TypeError(f"unsupported {type(node).__name__}")
