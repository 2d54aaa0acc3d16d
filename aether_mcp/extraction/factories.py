"""Factories: module-level functions that return a UDF, called with literal arguments; the UDF they return and the function without its wrapper."""

from __future__ import annotations

import ast

from aether_mcp.extraction.definitions import UDF_FACTORIES, UdfDefinition, dotted, last_name


def returned_udf(factory: ast.FunctionDef) -> tuple[ast.Call, ast.FunctionDef | ast.Lambda | None] | None:
    """The UDF a factory returns: (the udf/pandas_udf call or decorator, the function it wraps), or None if it returns none."""
    inner_defs = {n.name: n for n in factory.body if isinstance(n, ast.FunctionDef)}
    assigned = {t.id: s.value for s in factory.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    for statement in ast.walk(factory):
        if not isinstance(statement, ast.Return) or statement.value is None:
            continue
        value = statement.value
        if isinstance(value, ast.Name) and value.id in assigned:
            value = assigned[value.id]
        if isinstance(value, ast.Call) and factory_kind(value.func) is not None:
            wrapped = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "f"), None)
            if isinstance(wrapped, ast.Name):
                wrapped = inner_defs.get(wrapped.id)
            return value, wrapped if isinstance(wrapped, (ast.Lambda, ast.FunctionDef)) else None
        if isinstance(value, ast.Name) and value.id in inner_defs:
            inner = inner_defs[value.id]
            for decorator in inner.decorator_list:
                if factory_kind(decorator.func if isinstance(decorator, ast.Call) else decorator) is not None:
                    call = decorator if isinstance(decorator, ast.Call) else ast.Call(func=decorator, args=[], keywords=[])
                    return call, inner
    return None


def unwrapped_factory(factory: ast.FunctionDef) -> ast.FunctionDef:
    """The factory with each udf(...)/pandas_udf(...) wrapper replaced by the function it wraps, and UDF decorators dropped."""

    class Unwrap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if factory_kind(node.func) is not None:
                wrapped = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "f"), None)
                if wrapped is not None:
                    return wrapped
            return node

        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
            node.decorator_list = [d for d in node.decorator_list if factory_kind(d.func if isinstance(d, ast.Call) else d) is None]
            self.generic_visit(node)
            return node

    clone = ast.parse(ast.unparse(factory)).body[0]
    assert isinstance(clone, ast.FunctionDef)
    # a static method's decorator goes too: the factory becomes a module-level function
    clone.decorator_list = [d for d in clone.decorator_list if factory_kind(d.func if isinstance(d, ast.Call) else d) is None and last_name(d) != "staticmethod"]
    clone.body = [Unwrap().visit(statement) for statement in clone.body]
    return ast.fix_missing_locations(clone)


def is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def registered_name(node: ast.Call) -> str | None:
    """The SQL name of `spark.udf.register("name", ...)` or `register(name="name", ...)`; None when it is not a literal."""
    first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def factory_kind(node: ast.expr) -> str | None:
    name = last_name(node)
    return UDF_FACTORIES.get(name or "")


def factory_named(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The module-level function (or a class's static method, as `Class.name`) called `name` that returns a UDF, or None."""
    owner, _, method = name.rpartition(".")
    body = tree.body
    if owner:
        found = next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == owner), None)
        body = found.body if found is not None else []
    function = next((s for s in body if isinstance(s, ast.FunctionDef) and s.name == method), None)
    return function if function is not None and returned_udf(function) is not None else None


def call_sites(files: list[tuple[str, str]], name: str, most: int = 3) -> list[str]:
    """Up to `most` places ('FILE:LINE: code') among `files` ((shown, text) pairs) that call the factory `name`."""
    short = name.rpartition(".")[2]
    found = []
    for shown, text in files:
        if short not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and last_name(node.func) == short:
                found.append(f"{shown}:{node.lineno}: {ast.unparse(node)[:80]}")
                if len(found) >= most:
                    return found
    return found


def factory_function_name(definition: UdfDefinition) -> str:
    """The name a factory's plain function takes in original/udf.py: its own, or for a static method `_Class_method`
    (so it shadows no module-level name the factory itself reads)."""
    assert definition.factory is not None and definition.factory_call is not None
    func = definition.factory_call.func
    return "_" + dotted(func).replace(".", "_") if isinstance(func, ast.Attribute) else definition.factory.name
