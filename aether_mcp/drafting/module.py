"""What the extracted module offers the UDF: literal constants, literal tables, helpers and imports.

Only what can be read without running anything: a module-level name bound once to a literal (or a
`Decimal("0.01")` / `Context(prec=..., rounding=...)` the money idiom uses), a function defined at
module level, and the imports of `math` and `decimal`.
"""

from __future__ import annotations

import ast
import builtins
import copy
import math
from dataclasses import dataclass, field

from aether_mcp.drafting.values import Refused, kind_of


@dataclass(frozen=True)
class Table:
    """A module-level literal dict, tuple, list, set or frozenset."""

    name: str
    items: tuple[tuple[object, object], ...]  # (key, value); a sequence's values are None
    is_dict: bool
    line: int


@dataclass(frozen=True)
class DecimalConst:
    exponent: int  # Decimal("0.01") -> -2


@dataclass(frozen=True)
class DecimalContext:
    prec: int
    rounding: str | None


@dataclass(frozen=True)
class CompiledPattern:
    """NAME = re.compile("literal"[, flags]): the pattern and the flags' names."""

    pattern: str
    flags: tuple[str, ...]
    line: int
    maybe_regex: bool  # compiled by a name that may be the `regex` module


@dataclass
class Module:
    constants: dict[str, object] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    decimals: dict[str, DecimalConst | DecimalContext] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)  # local name -> "math", "math.isfinite", "decimal.Decimal"...
    rebound: set[str] = field(default_factory=set)
    bound: set[str] = field(default_factory=set)  # every name the module binds at its top level
    other: dict[str, tuple[int, str]] = field(default_factory=dict)  # a name bound to something not literal: its line and source
    calls: dict[str, ast.Call] = field(default_factory=dict)  # a name bound to a call of a module-level function (a UDF factory)
    patterns: dict[str, CompiledPattern] = field(default_factory=dict)
    namespaces: dict[str, dict[str, ast.expr]] = field(default_factory=dict)  # SimpleNamespace(NAME=...): what `module.NAME` reads
    opaque: bool = False  # a star import other than math's: any name may exist
    maybe_regex: set[str] = field(default_factory=set)  # names that may be the `regex` module (try: import regex as re / except ImportError: import re)


def read_module(tree: ast.Module) -> Module:
    module = Module()
    seen: set[str] = set()
    for node in tree.body:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store) or isinstance(inner, ast.Global):
                module.bound.update(inner.names if isinstance(inner, ast.Global) else [inner.id])
            if isinstance(inner, ast.Import | ast.ImportFrom):  # in a try: or an if: too
                module.bound.update((a.asname or a.name).split(".")[0] for a in inner.names)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            module.bound.add(node.name)
        if isinstance(node, ast.Try) and _guarded_imports(node):
            module.imports.update(_guarded_imports(node))
            module.maybe_regex.update(_guarded_imports(node))
        if isinstance(node, ast.Import | ast.ImportFrom):
            module.bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            module.opaque |= isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) and node.module != "math"
        if isinstance(node, ast.Import):
            for alias in node.names:
                module.imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name == "*" and node.module == "math":
                    module.imports.update({n: f"math.{n}" for n in dir(math) if not n.startswith("_")})
                elif alias.name != "*":
                    module.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.FunctionDef):
            module.functions[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for target in targets:
                if not isinstance(target, ast.Name) or value is None:
                    continue
                name = target.id
                if name in seen:
                    module.rebound.add(name)
                seen.add(name)
                _read_binding(module, name, value)
    for node in tree.body:  # what else the module does to a name: rebinding it in a block, += , D[k] = v, D.update(...)
        for inner in ast.walk(node):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and inner is not node and not isinstance(inner, ast.Global):
                continue
            if isinstance(inner, ast.AugAssign | ast.For | ast.With) or (isinstance(inner, ast.Assign | ast.AnnAssign) and node is not inner):
                targets = inner.targets if isinstance(inner, ast.Assign) else [getattr(inner, "target", None)] + [i.optional_vars for i in getattr(inner, "items", [])]
                module.rebound.update(n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name))
            if isinstance(inner, ast.Global):
                module.rebound.update(inner.names)
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and isinstance(inner.func.value, ast.Name):
                module.rebound.add(inner.func.value.id) if inner.func.attr not in READS else None
        if isinstance(node, ast.FunctionDef) and node.name in seen:
            module.rebound.add(node.name)
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            module.rebound.update(n.id for t in targets if not isinstance(t, ast.Name) for n in ast.walk(t) if isinstance(n, ast.Name))
            module.rebound.update(t.id for t in targets if isinstance(t, ast.Name) and t.id in module.functions)
    for name in module.rebound:
        module.constants.pop(name, None)
        module.tables.pop(name, None)
        module.decimals.pop(name, None)
        module.patterns.pop(name, None)
    _read_classes(module, tree)
    return module


def _read_classes(module: Module, tree: ast.Module) -> None:
    """A class used as a namespace (literal class attributes, static and class methods, no bases): flattened into the module.

    `Tier.LIMITS` and `cls.LIMITS` become the module-level literal `Tier__LIMITS`, `Tier.of(x)` a call of the
    module-level helper `Tier__of`, so the rest of the translator reads them as it reads the module's own.
    """
    changed = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store | ast.Del) and isinstance(n.value, ast.Name)}
    classes: dict[str, dict[str, str]] = {}  # class -> attribute -> flat name
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.bases or node.keywords or node.decorator_list or node.name in module.rebound | changed:
            continue
        flat: dict[str, str] = {}
        ok = True
        for item in node.body:
            if isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant):
                continue
            if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                flat[item.targets[0].id] = f"{node.name}__{item.targets[0].id}"
            elif isinstance(item, ast.FunctionDef) and [ast.unparse(d) for d in item.decorator_list] in (["staticmethod"], ["classmethod"]):
                flat[item.name] = f"{node.name}__{item.name}"
            else:
                ok = False
        if ok and not set(flat.values()) & module.bound and all(_cls_only_read(item, flat) for item in node.body):
            classes[node.name] = flat
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name not in classes:
            module.other[node.name] = (node.lineno, f"class {node.name}, which is more than literal attributes and static or class methods")
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name not in classes:
            continue
        for item in node.body:
            if isinstance(item, ast.Assign):
                _read_binding(module, classes[node.name][item.targets[0].id], item.value)  # type: ignore[attr-defined]
            elif isinstance(item, ast.FunctionDef):
                function = _Flatten(classes, node.name if ast.unparse(item.decorator_list[0]) == "classmethod" else None).visit(_copy(item))
                function.decorator_list = []
                function.name = classes[node.name][item.name]
                if ast.unparse(item.decorator_list[0]) == "classmethod":
                    function.args.args = function.args.args[1:]  # cls: every use of it is flattened above
                module.functions[function.name] = function
    if classes:
        for name, function in list(module.functions.items()):
            if "__" not in name or name.split("__")[0] not in classes:
                module.functions[name] = _Flatten(classes, None).visit(_copy(function))


def _cls_only_read(item: ast.stmt, flat: dict[str, str]) -> bool:
    """A class method's first parameter is only ever read as `cls.NAME` of the class's own attributes."""
    if not (isinstance(item, ast.FunctionDef) and ast.unparse(item.decorator_list[0]) == "classmethod"):
        return True
    if not item.args.args:
        return False
    cls = item.args.args[0].arg
    attributes = [n for n in ast.walk(item) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == cls]
    uses = [n for n in ast.walk(item) if isinstance(n, ast.Name) and n.id == cls]
    return len(uses) == len(attributes) and all(a.attr in flat for a in attributes) and cls == "cls"


class _Flatten(ast.NodeTransformer):
    def __init__(self, classes: dict[str, dict[str, str]], cls: str | None) -> None:
        self.classes, self.cls = classes, cls

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        if isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load):
            owner = self.cls if node.value.id == "cls" and self.cls else node.value.id
            if owner in self.classes and node.attr in self.classes[owner]:
                return ast.copy_location(ast.Name(id=self.classes[owner][node.attr], ctx=ast.Load()), node)
        return self.generic_visit(node)


def _copy(node: ast.FunctionDef) -> ast.FunctionDef:
    return copy.deepcopy(node)


def _read_binding(module: Module, name: str, value: ast.expr) -> None:
    try:
        literal = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        decimal = _decimal_binding(module, value)
        compiled = _compiled_pattern(module, value)
        if compiled is not None:
            module.patterns[name] = compiled
        elif decimal is not None:
            module.decimals[name] = decimal
        else:
            module.other[name] = (value.lineno, ast.unparse(value)[:60])
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                module.calls[name] = value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "SimpleNamespace" and not value.args:
                module.namespaces[name] = {k.arg: k.value for k in value.keywords if k.arg}  # a module the job imports, as extracted
        return
    if kind_of(literal) is not None:
        module.constants[name] = literal
    elif isinstance(literal, dict) and all(kind_of(k) is not None and kind_of(v) is not None for k, v in literal.items()) and literal:
        module.tables[name] = Table(name, tuple(literal.items()), True, value.lineno)
    elif isinstance(literal, tuple | list | set | frozenset) and all(_flat(v) for v in literal):
        module.tables[name] = Table(name, tuple((v, None) for v in literal), False, value.lineno)
    else:
        module.other[name] = (value.lineno, ast.unparse(value)[:60])


# Methods that only read the object they are called on: calling them at module level rebinds nothing.
READS = {"get", "keys", "values", "items", "copy", "count", "index", "startswith", "endswith", "format", "join", "lower", "upper", "strip", "split"}


def _flat(value: object) -> bool:
    """A literal or a tuple of literals (what a `for a, b in TABLE` loop unpacks)."""
    return kind_of(value) is not None or (isinstance(value, tuple) and all(kind_of(v) is not None for v in value))


def _qualified(module: Module, node: ast.expr) -> str | None:
    """What an imported name or `module.attr` names at module level: "decimal.Decimal", "re.compile", "re.ASCII"."""
    if isinstance(node, ast.Name):
        return module.imports.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in module.imports:
        return f"{module.imports[node.value.id]}.{node.attr}"
    return None


def _guarded_imports(node: ast.Try) -> dict[str, str]:
    """`try: import regex as re` / `except ImportError: import re`: `re`, whichever is taken.

    Only that pair is read: the patterns a draft takes mean the same in both modules.
    """
    branches = [node.body, *(h.body for h in node.handlers)]
    catches = all(isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers)
    if not node.handlers or node.orelse or node.finalbody or not catches or not all(isinstance(s, ast.Import) for b in branches for s in b):
        return {}
    bindings = [{a.asname or a.name: a.name for s in b for a in s.names} for b in branches]  # type: ignore[attr-defined]
    names = set(bindings[0])
    if any(set(b) != names for b in bindings) or not all(b[n] in ("re", "regex") for b in bindings for n in names):
        return {}
    return dict.fromkeys(names, "re")


def flag_names(module: Module, node: ast.expr | None) -> tuple[str, ...] | None:
    """re.ASCII | re.VERBOSE as ("ASCII", "VERBOSE"); None where the flags are not spelled so."""
    if node is None:
        return ()
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = flag_names(module, node.left), flag_names(module, node.right)
        return None if left is None or right is None else left + right
    named = _qualified(module, node) or ""
    return (named[3:],) if named.startswith("re.") and named.count(".") == 1 else None


def _compiled_pattern(module: Module, value: ast.expr) -> CompiledPattern | None:
    if not (isinstance(value, ast.Call) and _qualified(module, value.func) == "re.compile" and 1 <= len(value.args) <= 2):
        return None
    keywords = {k.arg: k.value for k in value.keywords}
    if set(keywords) - {"flags"} or (len(value.args) == 2 and keywords):
        return None
    source = value.args[0]
    pattern = source.value if isinstance(source, ast.Constant) else module.constants.get(source.id) if isinstance(source, ast.Name) else None
    flags = flag_names(module, value.args[1] if len(value.args) == 2 else keywords.get("flags"))
    if not isinstance(pattern, str) or flags is None:
        return None
    return CompiledPattern(pattern, flags, value.lineno, _module_name(value.func) in module.maybe_regex)


def _module_name(func: ast.expr) -> str | None:
    return func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None


def _decimal_binding(module: Module, value: ast.expr) -> DecimalConst | DecimalContext | None:
    if not isinstance(value, ast.Call):
        return None
    called = _qualified(module, value.func)
    if called == "decimal.Decimal":
        return decimal_quantum(value)
    if called == "decimal.Context" and not value.args:
        keywords = {k.arg: k.value for k in value.keywords}
        if set(keywords) - {"prec", "rounding"}:
            return None
        prec = keywords.get("prec")
        rounding = keywords.get("rounding")
        prec_value = prec.value if isinstance(prec, ast.Constant) and isinstance(prec.value, int) else None
        rounding_name = _rounding_name(module, rounding) if rounding is not None else None
        if prec_value is None or (rounding is not None and rounding_name is None):
            return None
        return DecimalContext(prec_value, rounding_name)
    return None


def decimal_quantum(call: ast.Call) -> DecimalConst | None:
    """Decimal("0.01") as a quantum: its exponent (-2); None for anything else."""
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        return None
    text = call.args[0].value
    import decimal

    try:
        number = decimal.Decimal(text)
    except decimal.InvalidOperation:
        return None
    if not number.is_finite() or number.adjusted() != number.as_tuple().exponent or number.as_tuple().digits != (1,):
        return None  # only a power of ten such as 1, 0.1, 0.01 is a quantum the recipe knows
    exponent = number.as_tuple().exponent
    return DecimalConst(exponent) if isinstance(exponent, int) and -22 <= exponent <= 0 else None


def _rounding_name(module: Module, node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        full = module.imports.get(node.id, "")
        return full.split(".")[-1] if full.startswith("decimal.") else None
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and module.imports.get(node.value.id) == "decimal":
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def undefined(module: Module, name: str) -> bool:
    """A name Python would not find at all when the line runs (NameError), such as Python 2's `unicode`."""
    known = module.constants.keys() | module.tables.keys() | module.decimals.keys() | module.functions.keys() | module.imports.keys() | module.patterns.keys()
    return not module.opaque and name not in known and name not in module.bound and not hasattr(builtins, name)


def refuse_unknown_name(module: Module, name: str, line: int) -> Refused:
    if name in module.rebound:
        return Refused(f"the name `{name}`, which the module binds or changes more than once (its value when the UDF runs is not read here)", line)
    if name in module.patterns:
        return Refused(f"the compiled pattern `{name}` used other than by its .sub(), .match(), .search() or .fullmatch()", line)
    if name in module.other:
        where, source = module.other[name]
        return Refused(f"the name `{name}`, bound at line {where} to `{source}`, which is not a literal the translator can read", line)
    return Refused(
        f"the name `{name}` (not an argument, a local, a module-level literal, a literal table or a module-level function)",
        line,
    )
