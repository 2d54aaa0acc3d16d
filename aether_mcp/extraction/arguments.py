"""A UDF's arguments: its parameters (with the types their hints give), and the values a job passes some of them as
literals at every call (F.lit(50), a constant), read from the call sites."""

from __future__ import annotations

import ast
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.extraction.definitions import LiteralDomain, UdfArgument, UdfDefinition, hint_to_type, last_name
from aether_mcp.extraction.pandas_forms import iterator_columns

_NOT_LITERAL = object()


def literal_arguments(tree: ast.Module, definition: UdfDefinition, count: int) -> dict[int, LiteralDomain]:
    """Positions at which every call of the UDF in the module passes `lit(<constant>)`, with the constants.

    Only calls by one of the UDF's names count; a call with keywords or *args makes every
    position unknown, and so does a UDF with no call in the module (it may be called elsewhere).
    """
    names = set(definition.aliases) | {definition.name}
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names]
    if not calls or any(call.keywords or any(isinstance(a, ast.Starred) for a in call.args) for call in calls):
        return {}
    domains: dict[int, LiteralDomain] = {}
    for position in range(count):
        values: list[Any] = []
        for call in calls:
            value = _lit_constant(call.args[position]) if position < len(call.args) else _NOT_LITERAL
            if value is _NOT_LITERAL:
                break
            if value not in values:
                values.append(value)
        else:
            domains[position] = LiteralDomain(values, sorted({call.lineno for call in calls}))
    return domains


def _lit_constant(node: ast.expr) -> Any:
    """The constant in `lit(c)` / `F.lit(c)` (a number, string or boolean; not None), else _NOT_LITERAL."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and last_name(node.func) == "lit"):
        return _NOT_LITERAL
    inner = node.args[0]
    if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub) and isinstance(inner.operand, ast.Constant) and type(inner.operand.value) in (int, float):
        return -inner.operand.value
    if isinstance(inner, ast.Constant) and type(inner.value) in (int, float, str, bool):
        return inner.value
    return _NOT_LITERAL


def arguments_of(definition: UdfDefinition, shown_as: str) -> list[UdfArgument]:
    args = definition.function.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        raise ToolError(
            f"unsupported UDF form: {definition.name!r} (line {definition.line}) takes *args, **kwargs or "
            "keyword-only parameters; Spark passes columns by position, so give it one parameter per column."
        )
    params = list(args.posonlyargs) + list(args.args)
    if not params:
        raise ToolError(f"UDF {definition.name!r} in {shown_as} takes no arguments; aether-mcp converts UDFs of one or more columns.")
    if definition.pandas_form == "iterator" and isinstance(definition.function, ast.FunctionDef):
        return [UdfArgument(name=name, hint_type=None) for name in iterator_columns(definition.function)]
    use_hints = definition.kind == "row"
    return [UdfArgument(name=a.arg, hint_type=hint_to_type(a.annotation) if use_hints else None) for a in params]
