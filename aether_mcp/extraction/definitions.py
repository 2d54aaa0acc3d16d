"""What extraction finds and returns (a UDF's definition, its arguments, the extracted module), the source reader, and type hints read as Spark types."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.lazy_import import lazy_module

T = lazy_module("pyspark.sql.types")


UDF_FACTORIES = {"udf": "row", "pandas_udf": "pandas"}


# Text that marks a module-level statement as Spark state an extracted UDF cannot carry along.
SPARK_STATE_MARKERS = ("SparkSession", "getOrCreate(", "sparkContext", ".broadcast(", "createDataFrame", ".read.")


_HINT_TYPES = {
    "int": "bigint",
    "float": "double",
    "str": "string",
    "bool": "boolean",
    "bytes": "binary",
    "bytearray": "binary",
    "Decimal": "decimal(38,18)",
    "date": "date",
    "datetime": "timestamp",
}


@dataclass
class UdfDefinition:
    """One UDF found in a source file."""

    name: str
    aliases: set[str]
    form: str
    kind: str
    line: int
    function: ast.FunctionDef | ast.Lambda | None
    function_name: str
    return_type: T.DataType | None
    return_type_error: str | None = None
    use_arrow: bool | None = None
    enclosing: str | None = None
    factory: ast.FunctionDef | None = None  # a UDF factory (`def make(a): return udf(...)`) the job calls with literals
    factory_call: ast.Call | None = None  # that call: `make(40.7, -74.0)`
    imported: ImportedName | None = None  # the wrapped function comes from a module the job imports (`from geo import haversine`)
    pandas_form: str | None = None  # a pandas UDF's form: "scalar" (Series to Series), "iterator" (Iterator[Series] to Iterator[Series]) or "aggregate" (Series to a scalar, per group)


@dataclass(frozen=True)
class ImportedName:
    """A name the job imports: `from <level dots><module> import <name>` (or `module.name` after `import module`)."""

    module: str | None
    level: int
    name: str
    line: int


@dataclass
class UdfArgument:
    name: str
    hint_type: str | None


@dataclass
class ExtractedUdf:
    """What `init_workspace` needs to write a workspace."""

    definition: UdfDefinition
    module_source: str
    arguments: list[UdfArgument]
    spark_conf: dict[str, str] = field(default_factory=dict)
    literal_arguments: dict[int, LiteralDomain] = field(default_factory=dict)
    undefined_names: list[str] = field(default_factory=list)  # read by the UDF, defined nowhere in the job: NameError there as here
    job_names: set[str] = field(default_factory=set)  # every name the job's module binds at module level
    star_imports: list[str] = field(default_factory=list)  # the modules the job star-imports
    local_modules: dict[str, str] = field(default_factory=dict)  # the job's own modules code was drawn from: path -> sha256
    notes: list[str] = field(default_factory=list)  # facts about the extraction init_workspace reports


@dataclass
class LiteralDomain:
    """An argument every call of the UDF in the job passes as a literal (`F.lit(7)`): its values and the calls' lines."""

    values: list[Any]
    lines: list[int]
    sites: list[str] = field(default_factory=list)  # "FILE:LINE" of calls in other files, or "default" for a parameter's default, when any


def read_source(path: Path, shown_as: str) -> tuple[str, ast.Module]:
    """The text and AST of a Python source file, or a ToolError saying why it is not one."""
    if not path.exists():
        raise ToolError(f"source file {shown_as} does not exist. Give the path of your PySpark job, relative to the server root.")
    if not path.is_file():
        raise ToolError(f"source {shown_as} is not a file. Give the path of a .py file with your PySpark job.")
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise ToolError(f"source {shown_as} is not Python (it is binary). Give the .py file that defines the UDF.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"source {shown_as} is not Python: it is not UTF-8 text ({exc.reason} at byte {exc.start}).") from exc
    try:
        tree = ast.parse(text, filename=shown_as)
    except SyntaxError as exc:
        kind = "is not Python" if not shown_as.endswith(".py") else "has a syntax error"
        raise ToolError(f"source {shown_as} {kind}: line {exc.lineno}: {exc.msg}. Fix the file (it must parse as Python 3) and try again.") from exc
    return text, tree


def imported_name(tree: ast.Module, name: str) -> ImportedName | None:
    """Where a module-level `from m import x [as name]` of the module takes `name` from, or None."""
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*" and (alias.asname or alias.name) == name:
                    return ImportedName(statement.module, statement.level, alias.name, statement.lineno)
    return None


def imported_module(tree: ast.Module, name: str) -> ImportedName | None:
    """The module a module-level `import m [as name]` (or `from pkg import m`) binds to `name`, as ImportedName(m, level, '', line)."""
    for statement in tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname == name or (alias.asname is None and alias.name == name):
                    return ImportedName(alias.name, 0, "", statement.lineno)
    found = imported_name(tree, name)
    if found is not None:
        module = f"{found.module}.{found.name}" if found.module else found.name
        return ImportedName(module, found.level, "", found.line)
    return None


def hint_to_type(annotation: ast.expr | None) -> str | None:
    """The Spark type a Python type hint implies (`float` -> double), or None when it implies none."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return hint_to_type(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [s for s in (annotation.left, annotation.right) if not is_none(s)]
        return hint_to_type(sides[0]) if len(sides) == 1 else None
    if isinstance(annotation, ast.Subscript):
        outer = last_name(annotation.value)
        inner = annotation.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        if outer == "Optional":
            return hint_to_type(items[0])
        if outer == "Union":
            rest = [i for i in items if not is_none(i)]
            return hint_to_type(rest[0]) if len(rest) == 1 else None
        if outer in ("list", "List", "Sequence") and len(items) == 1:
            element = hint_to_type(items[0])
            return f"array<{element}>" if element else None
        if outer in ("dict", "Dict", "Mapping") and len(items) == 2:
            key, value = hint_to_type(items[0]), hint_to_type(items[1])
            return f"map<{key},{value}>" if key and value else None
        return None
    return _HINT_TYPES.get(last_name(annotation) or "")


class UnreadableType(ValueError):
    def __init__(self, shown: str) -> None:
        super().__init__(f"{shown!r} is not a literal Spark type")


def last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def dotted(node: ast.expr) -> str:
    return ast.unparse(node)


def int_constant(node: ast.expr | None, default: int) -> int:
    if node is None:
        return default
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    raise UnreadableType(ast.unparse(node))


def is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
