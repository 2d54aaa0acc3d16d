"""Statements to a CASE chain: each `return` and `raise` becomes one branch, in the order Python reaches them.

A function body is read top to bottom with what is known of each local. An assignment binds a
local of `build()` (a Column, computed only where a branch uses it). A statement that can raise
puts its guard in the chain at its own place; an `if` that returns puts its branches there; an
`if` whose both sides go on merges what they assigned. A helper the UDF calls is read the same
way and inlined: its returns become one value, its raises guards of the call.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

from aether_mcp.drafting.calls import Calls
from aether_mcp.drafting.expressions import Expressions
from aether_mcp.drafting.module import Module
from aether_mcp.drafting.values import Guard, Refused, Value, both, constant, negate

MAX_BRANCHES = 200
STEP_PREFIX = "_draft_"  # the steps' column names, clear of the argument columns
MAX_UNROLLED = 50


@dataclass
class Branch:
    condition: str  # non-null boolean Column code; "F.lit(True)" for the rest of the rows
    value: Value | None  # None: the row raises `message`
    message: str = ""
    line: int = 0


@dataclass
class Emitter:
    lines: list[str] = field(default_factory=list)
    names: set[str] = field(default_factory=set)

    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W+", "_", hint).strip("_") or "v"
        name, n = base, 2
        taken = {known.lower() for known in self.names}  # step columns resolve case-insensitively in Spark
        while name.lower() in taken:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        return name


class Scope(Expressions, Calls):
    def __init__(self, module: Module, emitter: Emitter, env: dict[str, Value], used: set[str], notes: set[str], deviations: set[str], tables: set[str], inlining: tuple[str, ...] = ()):
        self.module = module
        self.emitter = emitter
        self.env = env
        self.unbound: set[str] = set()
        self.recipes = used
        self.notes = notes
        self.deviations = deviations
        self.tables_used = tables
        self.inlining = inlining
        self.line = 1
        self.assigned: set[str] = set()  # every name the function body assigns: local throughout it, as Python scopes

    def at_module_level(self) -> Scope:
        return Scope(self.module, self.emitter, {}, self.recipes, self.notes, self.deviations, self.tables_used, self.inlining)

    def local_names(self, body: list[ast.stmt]) -> None:
        self.assigned = {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - set(self.env)

    def where(self, line: int) -> str:
        inside = f" ({self.inlining[-1]})" if len(self.inlining) > 1 else ""
        return f"line {line}{inside}"

    def use(self, recipe: str) -> None:
        self.recipes.add(recipe)

    def bind(self, value: Value, hint: str, comment: str | None = None) -> Value:
        """Make a pure value a named step of build(), so later code refers to its column rather than repeating it."""
        if value.is_const or re.fullmatch(r"[A-Za-z_]\w*", value.code):
            return Value(value.code, value.kind, value.nullable, const=value.const, is_const=value.is_const, name=None if value.is_const else value.code)
        name = self.emitter.fresh(hint)
        if comment:
            self.emitter.lines.append(f"# {comment}")
        # a step: Spark computes it once per row, however often later steps use it (a value is pure: it never fails a row)
        self.emitter.lines.append(f"steps.append(({STEP_PREFIX + name!r}, {value.code}))")
        self.emitter.lines.append(f"{name} = F.col({STEP_PREFIX + name!r})")
        return Value(name, value.kind, value.nullable, name=name)

    def narrow(self, test: ast.expr, holds: bool) -> None:
        """What a test's outcome says of locals: `x is None` false, `x is not None` or `x` true -> x is not None."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            self.narrow(test.operand, not holds)
        elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == holds:
            for part in test.values:
                self.narrow(part, holds)
        elif (
            isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Constant) and test.left.value is None
            and isinstance(test.comparators[0], ast.Tuple | ast.List) and isinstance(test.ops[0], ast.In | ast.NotIn)
        ):
            if isinstance(test.ops[0], ast.NotIn) == holds:  # `None in (a, b)` false: neither is None
                for element in test.comparators[0].elts:
                    if isinstance(element, ast.Name):
                        self.not_none(element.id)
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name):
            op, right = test.ops[0], test.comparators[0]
            if isinstance(right, ast.Constant) and right.value is None and isinstance(op, ast.Is | ast.IsNot):
                if isinstance(op, ast.IsNot) == holds:
                    self.not_none(test.left.id)
            elif holds and not isinstance(op, ast.Is | ast.IsNot | ast.NotIn | ast.In | ast.Eq | ast.NotEq):
                self.not_none(test.left.id)  # an ordering that held: Python compared, so not None
        elif isinstance(test, ast.Name) and holds:
            self.not_none(test.id)

    def not_none(self, name: str) -> None:
        value = self.env.get(name)
        if value is not None and value.nullable:
            self.env[name] = Value(value.code, value.kind, False, value.guards, value.const, value.is_const, value.name)

    # --- statements ---------------------------------------------------------------

    def block(self, body: list[ast.stmt], branches: list[Branch]) -> bool:
        """Translate statements, appending branches; True if control can fall off the end."""
        for statement in body:
            if len(branches) > MAX_BRANCHES:
                raise Refused(f"a function of more than {MAX_BRANCHES} paths", statement.lineno)
            if not self.statement(statement, branches):
                return False
        return True

    def hoist(self, value: Value, branches: list[Branch], line: int) -> Value:
        for guard in value.guards:
            branches.append(Branch(guard.condition, None, guard.message, line))
            if guard.narrows:
                self.not_none_code(guard.narrows)
        return value.pure()

    def not_none_code(self, name: str) -> None:
        for local, value in self.env.items():
            if value.name == name or value.code == name:
                self.not_none(local)

    def statement(self, node: ast.stmt, branches: list[Branch]) -> bool:
        self.line = node.lineno
        source = ast.unparse(node).splitlines()[0][:100]
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return True  # a docstring
        if isinstance(node, ast.Pass):
            return True
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple) and len(targets[0].elts) == len(node.value.elts):
                if all(isinstance(t, ast.Name) for t in targets[0].elts):  # a, b = x, y: every value first, then the names
                    values = [self.hoist(self.expr(v), branches, node.lineno) for v in node.value.elts]
                    for target, value in zip(targets[0].elts, values, strict=True):
                        self.env[target.id] = self.bind(value, target.id, f"{self.where(node.lineno)}: {source}")  # type: ignore[attr-defined]
                        self.unbound.discard(target.id)  # type: ignore[attr-defined]
                    return True
            if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
                raise Refused(f"the assignment `{source}` (only `name = value` is drafted)", node.lineno)
            name = targets[0].id
            if isinstance(node, ast.AugAssign):
                value = self.arithmetic(type(node.op), self.expr(targets[0]), self.expr(node.value), node.lineno)
            else:
                value = self.expr(node.value)
            value = self.hoist(value, branches, node.lineno)
            self.env[name] = self.bind(value, name, f"{self.where(node.lineno)}: {source}")
            self.unbound.discard(name)
            return True
        if isinstance(node, ast.Return):
            value = self.expr(node.value) if node.value is not None else Value("F.lit(None)", "none", True, const=None, is_const=True)
            value = self.hoist(value, branches, node.lineno)
            branches.append(Branch("F.lit(True)", value, line=node.lineno))
            return False
        if isinstance(node, ast.Raise):
            branches.append(Branch("F.lit(True)", None, f"{self.exception_text(node)} (line {node.lineno})", node.lineno))
            return False
        if isinstance(node, ast.Assert):
            test = self.hoist(self.truth(self.expr(node.test), node.lineno), branches, node.lineno)
            branches.append(Branch(negate(test.code), None, f"AssertionError (line {node.lineno})", node.lineno))
            self.narrow(node.test, True)
            return True
        if isinstance(node, ast.If):
            return self.if_statement(node, branches)
        if isinstance(node, ast.For):
            return self.unrolled(node, branches)
        if isinstance(node, ast.Try):
            return self.try_statement(node, branches)
        raise Refused(f"the statement `{source}` ({type(node).__name__})", node.lineno, "write it by hand, or pick the vectorized target")

    def unrolled(self, node: ast.For, branches: list[Branch]) -> bool:
        """`for a, b in TABLE:` over a module-level literal sequence: the body once per item, the items as constants."""
        table = self.module.tables.get(node.iter.id) if isinstance(node.iter, ast.Name) and node.iter.id not in self.env else None
        if table is None or table.is_dict or node.orelse or len(table.items) > MAX_UNROLLED:
            raise Refused(f"the loop `for {ast.unparse(node.target)} in {ast.unparse(node.iter)[:60]}` (only loops over a module-level literal sequence of up to {MAX_UNROLLED} items are drafted)", node.lineno, "write it by hand, or pick the vectorized target")
        if any(isinstance(n, ast.Break | ast.Continue | ast.For | ast.While) for statement in node.body for n in ast.walk(statement)):
            raise Refused("break, continue or a nested loop inside a loop", node.lineno, "write it by hand, or pick the vectorized target")
        names = [node.target] if isinstance(node.target, ast.Name) else list(node.target.elts) if isinstance(node.target, ast.Tuple) else []
        if not names or not all(isinstance(n, ast.Name) for n in names):
            raise Refused(f"the loop target `{ast.unparse(node.target)}`", node.lineno)
        for item, _ in table.items:
            values = [item] if len(names) == 1 else list(item) if isinstance(item, tuple) and len(item) == len(names) else None
            if values is None:
                raise Refused(f"unpacking an item of `{table.name}` into {len(names)} names", node.lineno)
            for target, value in zip(names, values, strict=True):
                self.env[target.id] = constant(value, node.lineno)  # type: ignore[union-attr]
            if not self.block(node.body, branches):
                return False
        return True

    def try_statement(self, node: ast.Try, branches: list[Branch]) -> bool:
        """try: ... except Name(s): ... where both sides return or raise: each raise the handler catches leads into the handler's branches."""
        source = f"try: ... except {ast.unparse(node.handlers[0].type) if node.handlers and node.handlers[0].type else ''}"
        if len(node.handlers) != 1 or node.orelse or node.finalbody or node.handlers[0].name or node.handlers[0].type is None:
            raise Refused(f"the statement `{source}` (one `except Name:` or `except (A, B):` without `as`, else or finally is drafted)", node.lineno)
        handler = node.handlers[0]
        names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        if not all(isinstance(n, ast.Name) and isinstance(getattr(builtins, n.id, None), type) and issubclass(getattr(builtins, n.id), Exception) for n in names):
            raise Refused(f"the handler `except {ast.unparse(handler.type)}` (only builtin exceptions are drafted)", handler.lineno)
        caught = tuple(getattr(builtins, n.id) for n in names)  # type: ignore[union-attr]
        before, unbound_before = dict(self.env), set(self.unbound)
        inner: list[Branch] = []
        if self.block(node.body, inner):
            raise Refused(f"the statement `{source}` whose body does not end in a return or a raise", node.lineno)
        self.env = dict(before)  # the handler starts from what held before the try; what the body assigned is not known there
        self.unbound = unbound_before | {n.id for s in node.body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        handled: list[Branch] = []
        if self.block(handler.body, handled):
            raise Refused(f"the handler of `{source}` that does not end in a return or a raise", handler.lineno)
        for branch in inner:
            if branch.value is None and _caught(branch.message, caught, branch.line):
                branches.extend(Branch(both(branch.condition, h.condition), h.value, h.message, h.line) for h in handled)
            else:
                branches.append(branch)
        return False

    def exception_text(self, node: ast.Raise) -> str:
        exc = node.exc
        if exc is None:
            raise Refused("a bare `raise`", node.lineno)
        call = exc if isinstance(exc, ast.Call) else None
        name = ast.unparse(call.func if call else exc)
        message = ""
        if call and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
            message = f": {call.args[0].value}"
        return f"{name}{message}"

    def if_statement(self, node: ast.If, branches: list[Branch]) -> bool:
        test = self.truth(self.expr(node.test), node.lineno)
        test = self.hoist(test, branches, node.lineno)
        if test.is_const:
            return self.block(node.body if test.const else node.orelse, branches)
        condition = self.bind(test, "cond", f"{self.where(node.lineno)}: if {ast.unparse(node.test)[:90]}").code
        before = dict(self.env)
        unbound_before = set(self.unbound)
        outcomes = []
        for body, holds, where in ((node.body, True, condition), (node.orelse, False, negate(condition))):
            self.env = dict(before)
            self.unbound = set(unbound_before)
            self.narrow(node.test, holds)
            inner: list[Branch] = []
            goes_on = self.block(body, inner)
            branches.extend(Branch(both(where, b.condition), b.value, b.message, b.line) for b in inner)
            outcomes.append((goes_on, self.env, self.unbound))
        (then_on, then_env, then_unbound), (else_on, else_env, else_unbound) = outcomes
        if then_on and else_on:
            self.env, self.unbound = self.merge(condition, then_env, else_env, node.lineno), then_unbound | else_unbound
            self.unbound |= (set(then_env) ^ set(else_env))
            return True
        if then_on or else_on:
            self.env, self.unbound = (then_env, then_unbound) if then_on else (else_env, else_unbound)
            return True
        return False

    def merge(self, condition: str, then_env: dict[str, Value], else_env: dict[str, Value], line: int) -> dict[str, Value]:
        self.line = line
        merged: dict[str, Value] = {}
        for name in then_env.keys() & else_env.keys():
            a, b = then_env[name], else_env[name]
            if a.code == b.code and a.kind == b.kind:
                merged[name] = a if a.nullable or not b.nullable else b
                continue
            kind = self.merge_kind(a, b, line)
            value = Value(f"F.when({condition}, {a.code}).otherwise({b.code})", kind, a.nullable or b.nullable)
            merged[name] = self.bind(value, name, f"{self.where(line)}: `{name}` after the if")
        return merged

    # --- a function body as one value ----------------------------------------------------

    def call_body(self, name: str, function: ast.FunctionDef, params: dict[str, Value], guards: tuple[Guard, ...]) -> Value:
        inner = Scope(self.module, self.emitter, dict(params), self.recipes, self.notes, self.deviations, self.tables_used, (*self.inlining, name))
        inner.local_names(function.body)
        branches: list[Branch] = []
        if inner.block(function.body, branches):
            branches.append(Branch("F.lit(True)", Value("F.lit(None)", "none", True, const=None, is_const=True), line=function.lineno))
        value, raised = chain(branches, inner, name.strip("_") or "helper")
        return Value(value.code, value.kind, value.nullable, guards + raised, value.const, value.is_const)


def _caught(message: str, caught: tuple[type, ...], line: int) -> bool:
    """Whether `except caught` catches the exception a guard names ("ValueError: ...")."""
    name = message.split(":")[0].split(" ")[0]
    raised = getattr(builtins, name, None)
    if not (isinstance(raised, type) and issubclass(raised, BaseException)):  # decimal's InvalidOperation, a class of the module's own
        raise Refused(f"a `{name}` raised inside a try (whether the handler catches it depends on its class)", line)
    return issubclass(raised, caught)


def chain(branches: list[Branch], scope: Scope, hint: str) -> tuple[Value, tuple[Guard, ...]]:
    """The branches as one value (CASE over the returns) and the guards of the raises, each after the returns before it."""
    returns: list[Branch] = []
    guards: list[Guard] = []
    for branch in branches:
        if branch.value is None:
            earlier = [negate(r.condition) for r in returns]
            guards.append(Guard(both(*earlier, branch.condition), branch.message))
        else:
            returns.append(branch)
        if branch.condition == "F.lit(True)":
            break
    if not returns:
        return Value("F.lit(None)", "none", True, const=None, is_const=True), tuple(guards)
    kind = returns[0].value.kind  # type: ignore[union-attr]
    for r in returns[1:]:
        kind = scope.merge_kind(Value("", kind), r.value, r.line)  # type: ignore[arg-type]
    nullable = any(r.value.nullable for r in returns)  # type: ignore[union-attr]
    if len(returns) == 1 or returns[0].condition == "F.lit(True)":
        return Value(returns[0].value.code, kind, nullable), tuple(guards)  # type: ignore[union-attr]
    code = f"F.when({returns[0].condition}, {returns[0].value.code})"  # type: ignore[union-attr]
    for r in returns[1:]:
        code += f".otherwise({r.value.code})" if r.condition == "F.lit(True)" else f".when({r.condition}, {r.value.code})"  # type: ignore[union-attr]
    value = scope.bind(Value(code, kind, nullable), hint, f"what {hint}() returns")
    return Value(value.code, kind, nullable), tuple(guards)
