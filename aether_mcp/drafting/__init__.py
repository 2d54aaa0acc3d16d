"""Draft a `sql` candidate from the extracted original by reading it, never running it.

`draft(source, udf)` reads `original/udf.py` with `ast` and writes a candidate that computes, with
Spark Column expressions, what the Python computes, with Python's semantics: its None handling,
rounding, division, comparisons with NaN, whitespace and raises. A construct outside the subset
is refused with its line and what to do; no partial draft is written. The draft is a candidate
like any other: byte_compare, audit_candidate and verify prove or refute it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from aether_mcp.drafting.module import read_module
from aether_mcp.drafting.recipes import RECIPES, source_of
from aether_mcp.drafting.translator import Branch, Emitter, Scope
from aether_mcp.drafting.values import SPARK_KINDS, Refused, Value, constant, py_literal

__all__ = ["Draft", "Refused", "draft"]

# Names the draft's own code binds: a source local takes another name, an argument or table with one is refused.
RESERVED = {"F", "TARGET", "build", "steps", *RECIPES}


@dataclass
class Draft:
    text: str
    recipes: list[str]
    branches: int
    notes: list[str] = field(default_factory=list)
    deviations: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Signature:
    function: str
    args: list[tuple[str, str]]  # (name, Spark type)
    return_type: str
    kind: str = "row"
    use_arrow: bool | None = None

    @classmethod
    def of(cls, udf) -> Signature:
        """From a workspace's aether.toml [udf] section."""
        return cls(udf.function, [(a.name, a.type) for a in udf.args], udf.return_type, udf.kind, udf.use_arrow)


def draft(source: str, signature: Signature) -> Draft:
    """The draft's text, or Refused naming the first construct outside the subset."""
    if signature.kind != "row":
        raise Refused("a pandas UDF (the subset is row-at-a-time Python)", 1, "pick the vectorized target")
    tree = ast.parse(source)
    module = read_module(tree)
    if signature.function in module.rebound:
        raise Refused(f"the function `{signature.function}`, bound more than once at module level", 1)
    function, closure = module.functions.get(signature.function), {}
    if function is None:
        function, closure = _made_by_factory(module, signature.function)
    result_kind = SPARK_KINDS.get(signature.return_type.lower())
    if result_kind is None:
        raise Refused(f"the return type {signature.return_type}", function.lineno, "pick the vectorized target")
    params = [a.arg for a in function.args.args]
    if params != [name for name, _ in signature.args] or function.args.vararg or function.args.kwonlyargs:
        raise Refused("a UDF whose parameters are not its arguments in order", function.lineno)
    taken = sorted(RESERVED & (set(params) | set(module.tables)) | {p for p in params if p.lower().startswith("_draft_")})
    if taken:
        raise Refused(f"an argument or table named `{taken[0]}`, a name the draft's own code uses", function.lineno, "write the candidate by hand")
    # `_draft_result` is the last step's column; the builtins the draft's own code calls are never shadowed
    emitter = Emitter(names={*RESERVED, "result", "float", "isinstance", "list", "str", *module.tables, *params})
    env: dict[str, Value] = dict(closure)
    entry: list[str] = []
    for name, spark_type in signature.args:
        kind = SPARK_KINDS.get(spark_type.lower())
        if kind is None:
            raise Refused(f"the argument `{name}` of type {spark_type}", function.lineno, "pick the vectorized target")
        cast = {"int": ".cast('long')", "float": ".cast('double')"}.get(kind, "")  # Python ints do not overflow at 32 bits; a float arrives widened
        entry.append(f"{name} = _col({name}){cast}")
        env[name] = Value(name, kind, True, name=name)
    used: set[str] = {"_col"}
    notes: set[str] = set()
    deviations: set[str] = set()
    tables: set[str] = set()
    scope = Scope(module, emitter, env, used, notes, deviations, tables, (signature.function,))
    scope.local_names(function.body)
    branches: list[Branch] = []
    if scope.block(function.body, branches):
        branches.append(Branch("F.lit(True)", Value("F.lit(None)", "none", True, const=None, is_const=True), line=function.lineno))
    result = _result_chain(branches, result_kind, signature, used, function.lineno)
    text = _file_text(signature, source, module, tables, used, entry, emitter.lines, result)
    past = re.search(r"_int_past_64_bits\((\d+)\)", text)
    if past:
        raise Refused("an int constant past 64 bits (no Spark bigint holds it)", int(past.group(1)))
    return Draft(text, sorted(used - {"_col"}), len(branches), sorted(notes), sorted(deviations))


def _made_by_factory(module, name: str) -> tuple[ast.FunctionDef, dict[str, Value]]:
    """`name = factory(literals)`, the factory returning a lambda or an inner function: that function, its closure as constants."""
    call = module.calls.get(name)
    factory = module.functions.get(call.func.id) if call is not None else None  # type: ignore[union-attr]
    if call is None or factory is None:
        raise Refused(f"the function `{name}` is not defined at module level", 1)
    params = [a.arg for a in factory.args.args]
    if call.keywords or len(call.args) > len(params) or factory.args.vararg or factory.args.kwarg or factory.args.kwonlyargs:
        raise Refused(f"the factory call `{ast.unparse(call)[:60]}`", call.lineno)
    try:
        given = [ast.literal_eval(a) for a in call.args]
        defaults = [ast.literal_eval(d) for d in factory.args.defaults]
    except ValueError:
        raise Refused(f"the factory call `{ast.unparse(call)[:60]}` with arguments that are not literals", call.lineno) from None
    values = dict(zip(params[len(params) - len(defaults) :], defaults, strict=True)) | dict(zip(params, given, strict=False))
    if set(values) != set(params):
        raise Refused(f"the factory call `{ast.unparse(call)[:60]}` without every argument", call.lineno)
    inner = {n.name: n for n in factory.body if isinstance(n, ast.FunctionDef)}
    if len(inner) > 1:
        raise Refused(f"the factory `{factory.name}` with more than one inner function", factory.lineno)
    body = [n for n in factory.body if not isinstance(n, ast.FunctionDef) and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    returned = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    if isinstance(returned, ast.Lambda):
        function = ast.FunctionDef(name=name, args=returned.args, body=[ast.Return(value=returned.body, lineno=returned.lineno)], decorator_list=[], lineno=returned.lineno)
    elif isinstance(returned, ast.Name) and returned.id in inner:
        function = inner[returned.id]
    else:
        raise Refused(f"the factory `{factory.name}` (only one that returns a lambda or a function it defines is drafted)", factory.lineno)
    return function, {param: constant(value, call.lineno) for param, value in values.items()}


def _converted(value: Value, result_kind: str, signature: Signature, line: int) -> str:
    """A returned value as Spark keeps it under the declared type (the pickled path nulls a wrong Python type)."""
    if value.kind == "int" and signature.return_type.lower() in ("int", "integer") and not signature.use_arrow:
        return f"_wrap_int({value.code})"  # Spark keeps a pickled int past 32 bits wrapped (notes, section 0)
    if value.kind == "int" and signature.return_type.lower() in ("smallint", "tinyint", "short", "byte"):
        raise Refused(f"an int returned as {signature.return_type} (how Spark keeps one out of range is not drafted)", line)
    if value.kind in (result_kind, "none"):
        return value.code
    if value.kind == "bool" and result_kind == "int" and signature.use_arrow:
        return value.code
    if value.kind == "int" and result_kind == "float":
        return value.code if signature.use_arrow else "F.lit(None)"
    if value.kind == "float" and result_kind == "int" and not signature.use_arrow:
        return "F.lit(None)"
    raise Refused(f"a return of {value.kind} where the UDF declares {signature.return_type}", line)


def _result_chain(branches: list[Branch], result_kind: str, signature: Signature, used: set[str], line: int) -> str:
    parts: list[str] = []
    for branch in branches:
        if branch.value is None:
            used.add("_raise")
            outcome = f"_raise({branch.message!r})"
        else:
            outcome = _converted(branch.value, result_kind, signature, branch.line)
            if outcome.startswith("_wrap_int("):
                used.add("_wrap_int")
        last = branch.condition == "F.lit(True)"
        if not parts:
            parts.append(outcome if last else f"F.when({branch.condition}, {outcome})")
        else:
            parts.append(f".otherwise({outcome})" if last else f".when({branch.condition}, {outcome})")
        if last:
            break
    return "\n        ".join(parts)


def _file_text(signature: Signature, source: str, module, tables: set[str], used: set[str], entry: list[str], lines: list[str], result: str) -> str:
    args = ", ".join(name for name, _ in signature.args)
    header = (
        f'"""Draft of `{signature.function}`, written by draft_candidate from the extracted original (read, never run; the tests never shown).\n\n'
        "Each step names the source line it comes from; the recipes above build() give Python's semantics in Spark\n"
        "(notes: aether://notes/semantic-traps). Edit it freely: byte_compare and audit_candidate judge it like any candidate.\n"
        '"""\n\n'
        "from pyspark.sql import functions as F\n\n"
        'TARGET = "sql"\n'
    )
    table_lines = []
    for name in sorted(tables):
        table = module.tables[name]
        table_lines.append(f"\n# From the original (line {table.line}).\n{name} = {py_literal(dict(table.items))}\n")
    body = ["steps = []", *entry, *lines]
    spark_type = signature.return_type
    code = "\n".join(f"    {line}" for line in body)
    return (
        header
        + "".join(table_lines)
        + source_of(sorted(used))
        + f"\n\ndef build({args}):\n{code}\n    steps.append((\"_draft_result\", (\n        {result}\n    ).cast({spark_type!r})))\n    return steps\n"
    )


def outlook(source: str, udf) -> str:
    """What draft_candidate would do with an extracted UDF (`udf`: its aether.toml [udf] section), in one line."""
    try:
        draft(source, Signature.of(udf))
    except Refused as refused:
        return f"refused: {refused.construct[:100]} (line {refused.line} of original/udf.py)"
    except Exception as exc:  # noqa: BLE001 - a scan reports every UDF, whatever the translator makes of one
        return f"refused: the translator could not read it ({type(exc).__name__})"
    return "drafts a sql candidate (draft_candidate)"
