"""A UDF's arguments: its parameters (with the types their hints give), and the values a job passes some of them as
literals at every call (F.lit(50), a constant), read from the call sites."""

from __future__ import annotations

import ast
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.extraction.definitions import LiteralDomain, UdfArgument, UdfDefinition, hint_to_type, last_name
from aether_mcp.extraction.pandas_forms import iterator_columns

_NOT_LITERAL = object()


def literal_arguments(tree: ast.Module, definition: UdfDefinition, count: int, callers: list[tuple[str, ast.Module, set[str]]] | None = None) -> dict[int, LiteralDomain]:
    """Positions at which every call of the UDF passes `lit(<constant>)` (or leaves out a parameter with a constant default), with the constants.

    Calls in the module by one of the UDF's names count, and calls in `callers` ((shown, tree, the names that
    file imports the UDF as): the project's other files). A call with keywords or *args makes every position
    unknown, and so does a UDF with no call found (it may be called from elsewhere) or one the module passes on as a value.
    """
    names = set(definition.aliases) | {definition.name}
    found = [("", call) for call in _calls(tree, names)] + [(shown, call) for shown, other, imported in callers or [] for call in _calls(other, imported)]
    if not found or any(call.keywords or any(isinstance(a, ast.Starred) for a in call.args) for _, call in found):
        return {}
    called = {id(call.func) for _, call in found}
    # the statement that makes the UDF reads its function (`fee_udf = udf(fee, ...)`): that is no passing on
    own = next((s for s in ast.walk(tree) if isinstance(s, ast.stmt) and s.lineno == definition.line), None)
    making = {id(n) for n in ast.walk(own)} if own is not None else set()
    if any(isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load) and id(node) not in called | making for node in ast.walk(tree)):
        return {}  # passed on as a value (g = fee, spark.udf.register("x", fee)): whoever gets it may call it with anything
    # a row UDF called with fewer columns runs with the defaults; a pandas UDF would get a scalar there, not a column
    defaults = _constant_defaults(definition.function, count) if definition.kind == "row" else {}
    domains: dict[int, LiteralDomain] = {}
    for position in range(count):
        values: list[Any] = []
        for _, call in found:
            value = _lit_constant(call.args[position]) if position < len(call.args) else defaults.get(position, _NOT_LITERAL)
            if value is _NOT_LITERAL:
                break
            if value not in values:
                values.append(value)
        else:
            here = sorted({call.lineno for shown, call in found if not shown})
            sites = sorted({f"{shown}:{call.lineno}" for shown, call in found if shown}) + (["default"] if any(position >= len(call.args) for _, call in found) else [])
            domains[position] = LiteralDomain(values, here, sites)
    return domains


def _calls(tree: ast.Module, names: set[str]) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names]


def _constant_defaults(function: Any, count: int) -> dict[int, Any]:
    """Positions of parameters with a constant default (a number, string or boolean), and those constants."""
    args = getattr(function, "args", None)
    if args is None:
        return {}
    params = list(args.posonlyargs) + list(args.args)
    found = {}
    for position, default in zip(range(len(params) - len(args.defaults), len(params)), args.defaults):
        value = _lit_constant(ast.Call(func=ast.Name(id="lit"), args=[default], keywords=[]))
        if value is not _NOT_LITERAL and position < count:
            found[position] = value
    return found


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
