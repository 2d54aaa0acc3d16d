"""Find a Python UDF in a PySpark job's source and extract it, with exactly what it needs.

The source is parsed with `ast` and never imported or run. Recognised forms:
`@udf`, `@udf(...)`, `@F.udf(...)`, `@pandas_udf(...)` on a function; `name = udf(fn, type)`
(a function or a lambda); `spark.udf.register("name", fn, type)`, positional or by keyword;
`name = make_udf(40.7, "x")`, a module-level factory that returns a UDF, called with literals
(the factory travels without its UDF wrapper, and the job's call binds it); return types as DDL
strings or `DataType()` expressions (directly or through a module constant). The extracted
module holds the module-level imports (star imports included), constants, helpers and classes
the UDF uses, transitively, and nothing else; UDF decorators are dropped so the module is plain
Python. A name the job defines nowhere is kept as it is, so it raises where the job would.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
import symtable
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.lazy_import import lazy_module
from aether_mcp.local_modules import LocalModules
from aether_mcp.spark_types import TYPE_CLASS_NAMES, UnknownSparkType, parse_type, type_name

T = lazy_module("pyspark.sql.types")

UDF_FACTORIES = {"udf": "row", "pandas_udf": "pandas"}
# PandasUDFType names and values (pyspark.rdd.PythonEvalType) -> the form; None: not a column UDF at all.
PANDAS_FUNCTION_TYPES = {"SCALAR": "scalar", "SCALAR_ITER": "iterator", "GROUPED_AGG": "aggregate", "GROUPED_MAP": None, "MAP_ITER": None}
PANDAS_EVAL_TYPES = {200: "SCALAR", 204: "SCALAR_ITER", 202: "GROUPED_AGG", 201: "GROUPED_MAP", 205: "MAP_ITER"}
# DataFrame methods that take a plain function of pandas/Arrow frames rather than a column UDF.
FRAME_FUNCTION_METHODS = ("applyInPandas", "mapInPandas", "applyInArrow", "mapInArrow", "applyInPandasWithState", "transformWithStateInPandas")
# Text that marks a module-level statement as Spark state an extracted UDF cannot carry along.
SPARK_STATE_MARKERS = ("SparkSession", "getOrCreate(", "sparkContext", ".broadcast(", "createDataFrame", ".read.")
# Confs from the job that change what a UDF computes; resource confs do not travel.
SEMANTIC_CONF_PREFIXES = ("spark.sql.", "spark.python.")

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


def find_udfs(tree: ast.Module) -> list[UdfDefinition]:
    """Every UDF definition in the module, in source order, with duplicates of one function merged."""
    finder = _UdfFinder(tree)
    finder.visit(tree)
    merged: list[UdfDefinition] = []
    for found in sorted(finder.found, key=lambda d: d.line):
        same = next(
            (
                m
                for m in merged
                if found.function is not None
                and m.function is found.function
                and m.factory_call is found.factory_call
                and m.kind == found.kind
                and _same_type(m.return_type, found.return_type)
                and m.use_arrow == found.use_arrow
            ),
            None,
        )
        if same is not None:
            same.aliases |= found.aliases | {found.name}
        else:
            merged.append(found)
    return merged


def select_udf(udfs: list[UdfDefinition], wanted: str, shown_as: str) -> UdfDefinition:
    """The one UDF named `wanted` (`name` or `name:LINE`), or a ToolError listing what is there."""
    name, _, line_text = wanted.partition(":")
    name = name.strip()
    matches = [d for d in udfs if name == d.name or name in d.aliases]
    if line_text.strip():
        if not line_text.strip().isdigit():
            raise ToolError(f"udf {wanted!r}: after ':' give the line number of the definition, e.g. {name}:12.")
        wanted_line = int(line_text)
        matches = [d for d in matches if d.line <= wanted_line <= max(d.line, getattr(d.function, "lineno", d.line))]
    if not matches:
        if not udfs:
            raise ToolError(
                f"no Python UDFs found in {shown_as}. aether-mcp looks for @udf/@pandas_udf functions, "
                "`name = udf(fn, type)`, `spark.udf.register(\"name\", fn, type)` and `name = factory(literals)` "
                "where a module-level factory returns a UDF."
            )
        listing = ", ".join(f"{d.name} (line {d.line}, {d.form})" for d in udfs)
        raise ToolError(f"UDF {name!r} not found in {shown_as}. UDFs there: {listing}. Pass one of these names as udf.")
    if len(matches) > 1:
        listing = ", ".join(f"{d.name} at line {d.line} ({d.form})" for d in matches)
        raise ToolError(
            f"UDF name {name!r} is ambiguous in {shown_as}: {listing}. "
            f"Pass udf as '{name}:LINE' with the line of the one you mean, or rename one in the source."
        )
    return matches[0]


def udf_module(tree: ast.Module, wanted: str, path: Path, modules: LocalModules) -> Path | None:
    """The local module a job imports UDF `wanted` from (`from udfs import clean_name`, where udfs.py has `@udf ... def clean_name`), or None."""
    name = wanted.partition(":")[0].strip()
    imported = imported_name(tree, name)
    if imported is None:
        return None
    module = modules.find(path, imported.module, imported.level)
    if module is None:
        return None
    try:
        _, module_tree = read_source(module, module.name)
    except ToolError:
        return None
    return module if any(imported.name == d.name or imported.name in d.aliases for d in find_udfs(module_tree)) else None


def extract_udf(
    text: str,
    tree: ast.Module,
    definition: UdfDefinition,
    shown_as: str,
    *,
    path: Path | None = None,
    modules: LocalModules | None = None,
) -> ExtractedUdf:
    """Build the module text for original/udf.py and read the UDF's arguments and confs.

    With `path` and `modules`, what the UDF uses from the job's own modules (`from geo import
    haversine`, `from .patterns import SALARY_RE`, `import config` then `config.RATE`) is followed
    into those files and extracted from them too, into the one module.
    """
    job = SourceFile(shown_as, text, tree, path)
    return _Extraction(job, definition, modules).run()


@dataclass(eq=False)
class SourceFile:
    """A Python file the extraction reads: the job, or one of its local modules."""

    shown: str
    text: str
    tree: ast.Module
    path: Path | None = None
    index: _ModuleIndex = field(init=False)

    def __post_init__(self) -> None:
        self.index = _ModuleIndex(self.tree, self.text.splitlines())

    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


class _Extraction:
    """One UDF's extraction: the names it needs, followed through the job and its local modules, then one module's text."""

    def __init__(self, job: SourceFile, definition: UdfDefinition, modules: LocalModules | None) -> None:
        self.job = job
        self.definition = definition
        self.modules = modules
        self.loaded: dict[Path, SourceFile] = {}
        self.needed: dict[SourceFile, set[int]] = {}
        self.needed_aliases: dict[SourceFile, dict[int, set[str]]] = {}
        self.links: dict[SourceFile, list[tuple[str, str]]] = {}  # statements emitted at the start of a file's block: (code, name bound)
        self.depends: dict[SourceFile, list[SourceFile]] = {}  # a file's local modules, which run before it
        self.module_names: dict[tuple[SourceFile, str], SourceFile] = {}  # `import config` in a file: config is that local module
        self.module_attributes: dict[tuple[SourceFile, str], set[str]] = {}
        self.code_read: dict[SourceFile, list[str]] = {}
        self.unresolved: list[tuple[SourceFile, str]] = []
        self.seen: set[tuple[SourceFile, str]] = set()
        self.queue: list[tuple[SourceFile, str]] = []

    def run(self) -> ExtractedUdf:
        definition = self.definition
        home = self.job
        if definition.function is None and definition.imported is not None:
            home, definition.function = self._imported_function(self.job, definition.imported, 0)
        if definition.function is None or definition.return_type is None:
            raise ToolError(definition.return_type_error or f"cannot read the return type of UDF {definition.name!r}.")
        self.home = home
        function_code = _function_code(definition, home.index.lines)
        self.home_position = home.index.function_position(definition)
        self.seen.add((home, definition.function_name))
        self._read(home, function_code)
        while self.queue:
            file, name = self.queue.pop(0)
            if (file, name) not in self.seen:
                self.seen.add((file, name))
                self._resolve(file, name)
        self._refuse_enclosing_locals()
        order = self._order(home)
        self._refuse_spark_state(order)
        self._refuse_clashes(order)
        module_source = self._module_source(order, function_code)
        ast.parse(module_source)  # an extraction that does not parse is our bug: fail loudly
        arguments = _arguments(definition, self.job.shown)
        used = [file for file in order if file is not self.job]
        return ExtractedUdf(
            definition=definition,
            module_source=module_source,
            arguments=arguments,
            spark_conf=find_spark_conf(self.job.tree),
            literal_arguments=literal_arguments(self.job.tree, definition, len(arguments)),
            undefined_names=sorted({name for _, name in self.unresolved}),
            job_names={name for file in {self.job, *order} for name in _module_names(file)},
            star_imports=[file.index.statements[p].module or "" for file in order for p in sorted(self.needed.get(file, set())) if p in file.index.star_imports],
            local_modules={file.shown: file.sha256() for file in used},
        )

    # -- following names ------------------------------------------------------------------------

    def _read(self, file: SourceFile, code: str) -> None:
        """Queue what `code` (module-level code of `file`) reads from module scope."""
        self.code_read.setdefault(file, []).append(code)
        self.queue.extend((file, name) for name in sorted(_referenced_globals(code)))
        for (owner, name), module in list(self.module_names.items()):
            if owner is file:
                self._module_attributes(file, name, module, code)

    def _resolve(self, file: SourceFile, name: str) -> None:
        statements = file.index.bindings.get(name, [])
        if not statements:
            if name in vars(builtins):
                return
            if self._from_local_star(file, name):
                return
            stars = [p for p in file.index.star_imports if self._local_import(file, file.index.statements[p]) is None]
            if stars:
                # `from datetime import *` may provide it: every star import travels, as the job runs them
                self.needed.setdefault(file, set()).update(stars)
            else:
                self.unresolved.append((file, name))
            return
        for position in statements:
            if file is self.home and position == self.home_position:
                continue
            statement = file.index.statements[position]
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                if self._link_local(file, statement, name):
                    continue
                self.needed_aliases.setdefault(file, {}).setdefault(position, set()).add(name)
                self.needed.setdefault(file, set()).add(position)
                continue
            self.needed.setdefault(file, set()).add(position)
            self._read(file, file.index.code(position))

    def _link_local(self, file: SourceFile, statement: ast.Import | ast.ImportFrom, name: str) -> bool:
        """Follow `name`, bound by an import of a local module in `file`, into that module; False when it is a library's."""
        module = self._local_import(file, statement, name)
        if module is None:
            return False
        if isinstance(statement, ast.Import):
            alias = next(a for a in statement.names if (a.asname or a.name.split(".")[0]) == name)
            if "." in alias.name and not alias.asname:
                raise ToolError(
                    f"UDF {self.definition.name!r} uses the local module {alias.name} through `import {alias.name}` (line {statement.lineno} of {file.shown}); "
                    f"aether-mcp follows `from {alias.name} import NAME` and `import {alias.name} as NAME`. Import it one of those ways and try again."
                )
            self._module_name(file, name, self._load(module, file, statement))
            return True
        alias = next(a for a in statement.names if (a.asname or a.name) == name)
        source = self._load(module, file, statement)
        submodule = self.modules.submodule(module, alias.name) if self.modules else None
        if alias.name not in source.index.bindings and submodule is not None:
            self._module_name(file, name, self._load(submodule, file, statement))  # `from . import geo`: the module itself
            return True
        self._depend(file, source)
        self.queue.append((source, alias.name))
        if alias.name != name:
            self.links.setdefault(file, []).append((f"{name} = {alias.name}", name))
        return True

    def _from_local_star(self, file: SourceFile, name: str) -> bool:
        for position in sorted(file.index.star_imports):
            statement = file.index.statements[position]
            module = self._local_import(file, statement)
            if module is None:
                continue
            source = self._load(module, file, statement)
            if name in source.index.bindings or any(self._local_import(source, source.index.statements[p]) is None for p in source.index.star_imports):
                self._depend(file, source)
                self.queue.append((source, name))
                return True
        return False

    def _local_import(self, file: SourceFile, statement: ast.stmt, name: str | None = None) -> Path | None:
        """The local module file an import statement of `file` reads (for `import a, b`: the one bound to `name`), or None for a library's."""
        if self.modules is None or file.path is None or not isinstance(statement, (ast.Import, ast.ImportFrom)):
            return None
        if isinstance(statement, ast.ImportFrom):
            return self.modules.find(file.path, statement.module, statement.level)
        aliases = [a for a in statement.names if name is None or (a.asname or a.name.split(".")[0]) == name]
        return next((found for a in aliases if (found := self.modules.find(file.path, a.name, 0)) is not None), None)

    def _module_name(self, file: SourceFile, name: str, module: SourceFile) -> None:
        self.module_names[(file, name)] = module
        self.module_attributes.setdefault((file, name), set())
        self._depend(file, module)
        for code in self.code_read.get(file, []):
            self._module_attributes(file, name, module, code)

    def _module_attributes(self, file: SourceFile, name: str, module: SourceFile, code: str) -> None:
        """Queue every `name.attr` that `code` reads from the local module `name`; refuse any other use of it."""
        if name not in _referenced_globals(code):
            return
        parsed = ast.parse(code)
        through = {id(node.value) for node in ast.walk(parsed) if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name}
        bare = [node for node in ast.walk(parsed) if isinstance(node, ast.Name) and node.id == name and id(node) not in through]
        if bare:
            raise ToolError(
                f"UDF {self.definition.name!r} uses the local module {name} ({module.shown}) as a value, not only as {name}.NAME "
                f"(in {file.shown}: {code.strip().splitlines()[0][:80]!r}). aether-mcp carries the names a UDF reads from a local module; "
                f"import those names (from ... import NAME) and try again."
            )
        for node in ast.walk(parsed):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
                attributes = self.module_attributes[(file, name)]
                if node.attr not in attributes:
                    attributes.add(node.attr)
                    self.queue.append((module, node.attr))

    def _imported_function(self, file: SourceFile, imported: ImportedName, depth: int) -> tuple[SourceFile, ast.FunctionDef]:
        """The file and module-level def of a function the job imports, followed through re-exports."""
        where = f"{_import_text(imported)} (line {imported.line} of {file.shown})"
        module = self.modules.find(file.path, imported.module, imported.level) if self.modules and file.path else None
        if module is None:
            raise ToolError(
                f"UDF {self.definition.name!r} wraps {imported.name!r}, imported by {where}, which is not a module under the server root "
                "(a library, or a file outside it). aether-mcp extracts functions from the job's own modules: start the server with a root "
                "that holds the whole project, or define the function in the job."
            )
        source = self._load(module, file, None)
        definitions = [s for s in source.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == imported.name]
        if definitions:
            return source, definitions[-1]
        again = imported_name(source.tree, imported.name)
        if again is not None and depth < 8:
            return self._imported_function(source, again, depth + 1)
        raise ToolError(
            f"UDF {self.definition.name!r} wraps {imported.name!r}, imported by {where}, but {source.shown} does not define it with a module-level def "
            "(a lambda, a callable object or a name made at run time cannot be extracted). Write it as a module-level def and try again."
        )

    def _load(self, path: Path, importer: SourceFile, statement: ast.stmt | None) -> SourceFile:
        if path not in self.loaded:
            shown = path.relative_to(self.modules.root).as_posix() if self.modules else path.name
            try:
                text, tree = read_source(path, shown)
            except ToolError as exc:
                line = f" at line {statement.lineno}" if statement is not None else ""
                raise ToolError(f"{importer.shown} imports the local module {shown}{line}, which aether-mcp must read to extract the UDF: {exc}") from None
            self.loaded[path] = SourceFile(shown, text, tree, path)
        return self.loaded[path]

    def _depend(self, file: SourceFile, module: SourceFile) -> None:
        if module is not file and module not in self.depends.setdefault(file, []):
            self.depends[file].append(module)

    # -- refusals -----------------------------------------------------------------------------------

    def _refuse_enclosing_locals(self) -> None:
        if self.home is not self.job:
            return
        local = sorted(name for file, name in self.unresolved if file is self.job and name in _enclosing_bindings(self.job.tree, self.definition))
        if local:
            raise ToolError(
                f"UDF {self.definition.name!r} uses names that {self.job.shown} does not define at module level: {', '.join(local)} "
                f"(the UDF is defined inside {self.definition.enclosing}(); names local to it are not visible once extracted). "
                "Move them to module level in the source and try again."
            )

    def _refuse_spark_state(self, order: list[SourceFile]) -> None:
        for file in order:
            for position in sorted(self.needed.get(file, set())):
                statement = file.index.statements[position]
                code = file.index.code(position)
                if not isinstance(statement, (ast.Import, ast.ImportFrom)) and any(m in code for m in SPARK_STATE_MARKERS):
                    raise ToolError(
                        f"UDF {self.definition.name!r} depends on module-level Spark state at line {statement.lineno} of {file.shown} "
                        f"({code.strip().splitlines()[0][:80]!r}). Only plain Python can be extracted: make that value a literal "
                        "constant (or a plain-Python computation) in the source and try again."
                    )

    def _refuse_clashes(self, order: list[SourceFile]) -> None:
        """Two files binding one name in the one extracted module would change what the UDF computes: refuse."""
        owners: dict[str, dict[str, set[str]]] = {}  # name -> file shown -> how it is bound (an import's text, or a line)

        def bind(name: str, file: SourceFile, how: str) -> None:
            owners.setdefault(name, {}).setdefault(file.shown, set()).add(how)

        for file in order:
            for position in self.needed.get(file, set()):
                statement = file.index.statements[position]
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    for name in self.needed_aliases.get(file, {}).get(position, set()):
                        bind(name, file, _filtered_import(statement, {name}))
                else:
                    for name in file.index._bound_names(statement):
                        bind(name, file, f"line {statement.lineno}")
            for _, name in self.links.get(file, []):
                bind(name, file, "import")
            for (owner, name) in self.module_names:
                if owner is file:
                    bind(name, file, "import")
        bind(self.definition.function_name, self.home, f"line {self.definition.function.lineno}")  # type: ignore[union-attr]
        for name, by_file in sorted(owners.items()):
            if len(by_file) < 2:
                continue
            hows = {how for found in by_file.values() for how in found}
            if len(hows) == 1 and next(iter(hows)).startswith(("import ", "from ")):
                continue  # the same import in two files binds the same thing
            places = " and ".join(f"{shown} ({', '.join(sorted(how))})" for shown, how in by_file.items())
            raise ToolError(
                f"UDF {self.definition.name!r} needs {name!r} from {places}: in the one extracted module they would be one name, "
                "which would change what the UDF computes. Rename one of them in the source and try again."
            )

    # -- the module's text --------------------------------------------------------------------------

    def _order(self, home: SourceFile) -> list[SourceFile]:
        """Files in the order Python runs their code: each local module before the file that imports it."""
        order: list[SourceFile] = []
        visiting: set[SourceFile] = set()

        def visit(file: SourceFile) -> None:
            if file in order or file in visiting:
                return
            visiting.add(file)
            for module in self.depends.get(file, []):
                visit(module)
            order.append(file)

        visit(home)
        return order

    def _module_source(self, order: list[SourceFile], function_code: str) -> str:
        definition = self.definition
        others = [file.shown for file in order if file is not self.job]
        parts: list[str] = [
            f"# UDF `{definition.name}` ({definition.form}), extracted by aether-mcp from {self.job.shown}, line {definition.line}"
            + (f", with what it uses from {', '.join(others)}." if others else "."),
            "# Protected: this is the reference every conversion is compared against. Do not edit.",
            "",
        ]
        for file in order:
            for statement in file.tree.body:
                if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                    parts.append(ast.unparse(statement))
        for file in order:
            parts += [code for code, _ in self.links.get(file, [])]
            for (owner, name), module in self.module_names.items():
                if owner is file:
                    fields = ", ".join(f"{a}={a}" for a in sorted(self.module_attributes[(owner, name)]))
                    parts.append(f"{name} = __import__(\"types\").SimpleNamespace({fields})  # what the UDF reads from {module.shown}")
            is_home = file is self.home
            positions = self.needed.get(file, set()) | ({self.home_position} if is_home and self.home_position is not None else set())
            for position in sorted(positions):
                if is_home and position == self.home_position:
                    parts.append(function_code)
                elif position in self.needed_aliases.get(file, {}):
                    parts.append(_filtered_import(file.index.statements[position], self.needed_aliases[file][position]))
                else:
                    parts.append(file.index.code(position))
            if is_home and self.home_position is None:
                parts.append(function_code)
        return _join_blocks(parts)


def _module_names(file: SourceFile) -> set[str]:
    """Every name `file` binds at module level (`global X` in a function included)."""
    names = {name for name in file.index.bindings if name != "*"}
    return names | {name for node in ast.walk(file.tree) if isinstance(node, ast.Global) for name in node.names}


def _import_text(imported: ImportedName) -> str:
    return f"from {'.' * imported.level}{imported.module or ''} import {imported.name}"


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


def find_spark_conf(tree: ast.Module) -> dict[str, str]:
    """Semantic Spark confs the job sets with literal values (`.config(k, v)`, `spark.conf.set(k, v)`)."""
    conf: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 2):
            continue
        is_builder_config = node.func.attr == "config"
        is_conf_set = node.func.attr == "set" and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "conf"
        if not (is_builder_config or is_conf_set):
            continue
        key, value = node.args
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Constant)):
            continue
        if not key.value.startswith(SEMANTIC_CONF_PREFIXES):
            continue
        literal = value.value
        conf[key.value] = str(literal).lower() if isinstance(literal, bool) else str(literal)
    return conf


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
        sides = [s for s in (annotation.left, annotation.right) if not _is_none(s)]
        return hint_to_type(sides[0]) if len(sides) == 1 else None
    if isinstance(annotation, ast.Subscript):
        outer = _last_name(annotation.value)
        inner = annotation.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        if outer == "Optional":
            return hint_to_type(items[0])
        if outer == "Union":
            rest = [i for i in items if not _is_none(i)]
            return hint_to_type(rest[0]) if len(rest) == 1 else None
        if outer in ("list", "List", "Sequence") and len(items) == 1:
            element = hint_to_type(items[0])
            return f"array<{element}>" if element else None
        if outer in ("dict", "Dict", "Mapping") and len(items) == 2:
            key, value = hint_to_type(items[0]), hint_to_type(items[1])
            return f"map<{key},{value}>" if key and value else None
        return None
    return _HINT_TYPES.get(_last_name(annotation) or "")


# ---------------------------------------------------------------------------------------------
# Finding UDF definitions


class _UdfFinder(ast.NodeVisitor):
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.found: list[UdfDefinition] = []
        self.enclosing: list[ast.AST] = []
        self.imported: ImportedName | None = None  # set by _resolve_function for the next _add
        self.module_constants = {
            target.id: statement.value
            for statement in tree.body
            if isinstance(statement, ast.Assign)
            for target in statement.targets
            if isinstance(target, ast.Name)
        }

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            factory = _factory_kind(call.func if call else decorator)
            if factory is None:
                continue
            args = list(call.args) if call else []
            keywords = {k.arg: k.value for k in call.keywords if k.arg} if call else {}
            return_node = args[0] if args else keywords.get("returnType")
            self._add(
                name=node.name,
                aliases=set(),
                form=f"@{_dotted(call.func if call else decorator)}" + ("(...)" if call else ""),
                kind=factory,
                line=decorator.lineno,
                function=node,
                function_name=node.name,
                return_node=return_node,
                keywords=keywords,
                extra_args=args[1:],
            )
        self.enclosing.append(node)
        self.generic_visit(node)
        self.enclosing.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        if isinstance(value, ast.Call) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            factory = _factory_kind(value.func)
            made = self._udf_factory(value) if factory is None else None
            if made is not None:
                self._add_from_factory(node, node.targets[0].id, value, *made)
            if factory is not None:
                keywords = {k.arg: k.value for k in value.keywords if k.arg}
                target = node.targets[0].id
                fn_node = value.args[0] if value.args else keywords.get("f")
                return_node = value.args[1] if len(value.args) > 1 else keywords.get("returnType")
                function, function_name, problem = self._resolve_function(fn_node, target, node.lineno)
                self._add(
                    problem=problem,
                    name=target,
                    aliases={function_name} if isinstance(function, ast.FunctionDef) else set(),
                    form=f"{target} = {_dotted(value.func)}(...)",
                    kind=factory,
                    line=node.lineno,
                    function=function,
                    function_name=function_name,
                    return_node=return_node,
                    keywords=keywords,
                    extra_args=value.args[2:],
                )
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "register"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "udf"
            and isinstance(_registered_name(node), str)
        ):
            registered = _registered_name(node)
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            fn_node = node.args[1] if len(node.args) > 1 else keywords.get("f")
            return_node = node.args[2] if len(node.args) > 2 else keywords.get("returnType")
            # Registering an existing UDF object: it keeps that UDF's type and kind.
            if isinstance(fn_node, ast.Name):
                for existing in self.found:
                    if existing.name == fn_node.id and return_node is None:
                        existing.aliases.add(registered)
                        break
                else:
                    self._add_registered(node, registered, fn_node, return_node, keywords)
            else:
                self._add_registered(node, registered, fn_node, return_node, keywords)
        elif isinstance(func, ast.Attribute) and func.attr in FRAME_FUNCTION_METHODS and node.args and isinstance(node.args[0], ast.Name):
            # df.groupBy(...).applyInPandas(fn, schema): fn takes whole frames; found so that asking for it says why it cannot be taken
            fn = node.args[0].id
            self._add(
                problem=(
                    f"{fn!r} is a function of whole frames, given to {func.attr}() at line {node.lineno}; aether-mcp converts column UDFs "
                    "(row UDFs, and scalar, iterator or Series-to-scalar pandas UDFs), not grouped-map or map-in-pandas functions yet."
                ),
                name=fn, aliases=set(), form=f".{func.attr}({fn}, ...)", kind="pandas", line=node.lineno, function=None,
                function_name=fn, return_node=None, keywords={}, extra_args=[],
            )
        self.generic_visit(node)

    def _udf_factory(self, call: ast.Call) -> tuple[ast.FunctionDef, ast.Call, ast.FunctionDef | ast.Lambda | None] | None:
        """(factory, the udf(...) call it returns, the function that call wraps) when `call` calls a module-level UDF factory."""
        if not isinstance(call.func, ast.Name):
            return None
        factory = next((s for s in self.tree.body if isinstance(s, ast.FunctionDef) and s.name == call.func.id), None)
        if factory is None:
            return None
        made = _returned_udf(factory)
        if made is None:
            return None
        inner_call, wrapped = made
        return factory, inner_call, wrapped

    def _add_from_factory(self, node: ast.Assign, target: str, call: ast.Call, factory: ast.FunctionDef, inner_call: ast.Call, wrapped) -> None:
        keywords = {k.arg: k.value for k in inner_call.keywords if k.arg}
        kind = _factory_kind(inner_call.func) or "row"
        if isinstance(wrapped, ast.FunctionDef) and wrapped.decorator_list and inner_call in wrapped.decorator_list:
            return_node = inner_call.args[0] if inner_call.args else keywords.get("returnType")
            extra_args = inner_call.args[1:]
        else:
            return_node = inner_call.args[1] if len(inner_call.args) > 1 else keywords.get("returnType")
            extra_args = inner_call.args[2:]
        problem = None
        if wrapped is None:
            problem = f"UDF factory {factory.name}() at line {factory.lineno} returns a UDF of something other than a lambda or a function defined in it; aether-mcp cannot extract it."
        elif not all(_is_literal(argument) for argument in [*call.args, *(k.value for k in call.keywords)]) or any(k.arg is None for k in call.keywords):
            problem = (
                f"UDF {target!r} at line {node.lineno} comes from the factory {factory.name}() called with arguments that are not literals "
                f"({ast.unparse(call)}). Only a factory called with literal arguments can be bound; pass literals, or write the UDF as a "
                "module-level function."
            )
        self._add(
            problem=problem,
            name=target,
            aliases=set(),
            form=f"{target} = {factory.name}(...)",
            kind=kind,
            line=node.lineno,
            function=wrapped,
            function_name=target,
            return_node=return_node,
            keywords=keywords,
            extra_args=extra_args,
            factory=(factory, call),
        )

    def _add_registered(self, node: ast.Call, registered: str, fn_node, return_node, keywords) -> None:
        function, function_name, problem = self._resolve_function(fn_node, registered, node.lineno)
        self._add(
            problem=problem,
            name=registered,
            aliases={function_name} if isinstance(function, ast.FunctionDef) else set(),
            form="spark.udf.register",
            kind="row",
            line=node.lineno,
            function=function,
            function_name=function_name,
            return_node=return_node,
            keywords=keywords,
            extra_args=[],
        )

    def _resolve_function(self, fn_node: ast.expr | None, udf_name: str, line: int) -> tuple[ast.FunctionDef | ast.Lambda | None, str, str | None]:
        """The function a UDF wraps, its name, and (when it cannot be extracted) why not."""
        if isinstance(fn_node, ast.Lambda):
            name = re.sub(r"\W", "_", udf_name)
            return fn_node, name if name.isidentifier() else f"udf_{name}", None
        if isinstance(fn_node, ast.Name):
            definitions = [
                n for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fn_node.id
            ]
            before = [d for d in definitions if d.lineno <= line] or definitions
            if before:
                module_level = [d for d in before if d in self.tree.body]
                return (module_level or before)[-1], fn_node.id, None
            imported = imported_name(self.tree, fn_node.id)
            if imported is not None:
                self.imported = imported
                return None, imported.name, None
            return None, fn_node.id, (
                f"UDF {udf_name!r} at line {line} wraps {fn_node.id!r}, which this file neither defines nor imports "
                "at module level. Define or import it at module level in the job and try again."
            )
        if isinstance(fn_node, ast.Attribute) and isinstance(fn_node.value, ast.Name):
            module = imported_module(self.tree, fn_node.value.id)
            if module is not None:
                self.imported = ImportedName(module.module, module.level, fn_node.attr, module.line)
                return None, fn_node.attr, None
        shown = ast.unparse(fn_node) if fn_node is not None else "nothing"
        return None, udf_name, (
            f"unsupported UDF form at line {line}: UDF {udf_name!r} wraps {shown!r}. aether-mcp extracts a named "
            "function or a lambda; wrap methods and partials in a plain module-level function."
        )

    def _add(self, *, name, aliases, form, kind, line, function, function_name, return_node, keywords, extra_args, problem=None, factory=(None, None)) -> None:
        return_type, error = None, problem
        imported, self.imported = self.imported, None
        pandas_form = None
        if error is None and kind == "pandas":
            pandas_form, error = _pandas_form(keywords.get("functionType") or (extra_args[0] if extra_args else None), function, line)
        if error is None:
            if return_node is None and kind == "pandas":
                error = f"pandas UDF {name!r} at line {line} has no return type; pass return_type."
            else:
                try:
                    return_type = T.StringType() if return_node is None else self._read_type(return_node, set())
                except (UnknownSparkType, _UnreadableType) as exc:
                    error = (
                        f"cannot read the return type of UDF {name!r} at line {line}: {exc}. "
                        "Pass return_type as a Spark DDL type name, e.g. return_type='double'."
                    )
        self.found.append(
            UdfDefinition(
                name=name,
                aliases=set(aliases) - {name},
                form=form,
                kind=kind,
                line=line,
                function=function,
                function_name=function_name,
                return_type=return_type,
                return_type_error=error,
                use_arrow=self._use_arrow(kind, form, keywords, line),
                enclosing=getattr(self.enclosing[-1], "name", None) if self.enclosing else None,
                factory=factory[0],
                factory_call=factory[1],
                imported=imported,
                pandas_form=pandas_form,
            )
        )

    def _use_arrow(self, kind: str, form: str, keywords: dict[str, ast.expr], line: int) -> bool | None:
        """Whether the job's Python UDF uses Arrow transport: True, False, or None (the session conf decides).

        PySpark fixes this when the UDF object is created: `useArrow` if given; a plain function
        registered with spark.udf.register is pickled; a UDF created while no SparkSession exists
        (module level, before any getOrCreate) is pickled; otherwise the session's
        spark.sql.execution.pythonUDF.arrow.enabled decides.
        """
        explicit = keywords.get("useArrow")
        if isinstance(explicit, ast.Constant) and isinstance(explicit.value, bool):
            return explicit.value
        if kind == "pandas":
            return None
        if form == "spark.udf.register":
            return False
        if not self.enclosing and not self._session_created_before(line):
            return False
        return None

    def _session_created_before(self, line: int) -> bool:
        return any(
            "getOrCreate(" in ast.unparse(statement)
            for statement in self.tree.body
            if (statement.end_lineno or 0) < line and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        )

    def _read_type(self, node: ast.expr, visiting: set[str]) -> T.DataType:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return parse_type(node.value)
        if isinstance(node, ast.Name) and node.id in self.module_constants and node.id not in visiting:
            return self._read_type(self.module_constants[node.id], visiting | {node.id})
        if isinstance(node, ast.Call):
            cls = _last_name(node.func)
            args = list(node.args)
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            if cls in TYPE_CLASS_NAMES:
                return parse_type(TYPE_CLASS_NAMES[cls])
            if cls == "DecimalType":
                precision = _int_constant(args[0] if args else keywords.get("precision"), 10)
                scale = _int_constant(args[1] if len(args) > 1 else keywords.get("scale"), 0)
                return T.DecimalType(precision, scale)
            if cls == "ArrayType" and (args or "elementType" in keywords):
                return T.ArrayType(self._read_type(args[0] if args else keywords["elementType"], visiting), True)
            if cls == "MapType" and len(args) >= 2:
                return T.MapType(self._read_type(args[0], visiting), self._read_type(args[1], visiting), True)
            if cls == "StructType" and args and isinstance(args[0], (ast.List, ast.Tuple)):
                fields = []
                for item in args[0].elts:
                    if not (isinstance(item, ast.Call) and _last_name(item.func) == "StructField" and len(item.args) >= 2):
                        raise _UnreadableType(ast.unparse(item))
                    field_name = item.args[0]
                    if not (isinstance(field_name, ast.Constant) and isinstance(field_name.value, str)):
                        raise _UnreadableType(ast.unparse(item))
                    fields.append(T.StructField(field_name.value, self._read_type(item.args[1], visiting), True))
                return T.StructType(fields)
        raise _UnreadableType(ast.unparse(node))


class _UnreadableType(ValueError):
    def __init__(self, shown: str) -> None:
        super().__init__(f"{shown!r} is not a literal Spark type")


def _returned_udf(factory: ast.FunctionDef) -> tuple[ast.Call, ast.FunctionDef | ast.Lambda | None] | None:
    """The UDF a factory returns: (the udf/pandas_udf call or decorator, the function it wraps), or None if it returns none."""
    inner_defs = {n.name: n for n in factory.body if isinstance(n, ast.FunctionDef)}
    assigned = {t.id: s.value for s in factory.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
    for statement in ast.walk(factory):
        if not isinstance(statement, ast.Return) or statement.value is None:
            continue
        value = statement.value
        if isinstance(value, ast.Name) and value.id in assigned:
            value = assigned[value.id]
        if isinstance(value, ast.Call) and _factory_kind(value.func) is not None:
            wrapped = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "f"), None)
            if isinstance(wrapped, ast.Name):
                wrapped = inner_defs.get(wrapped.id)
            return value, wrapped if isinstance(wrapped, (ast.Lambda, ast.FunctionDef)) else None
        if isinstance(value, ast.Name) and value.id in inner_defs:
            inner = inner_defs[value.id]
            for decorator in inner.decorator_list:
                if _factory_kind(decorator.func if isinstance(decorator, ast.Call) else decorator) is not None:
                    call = decorator if isinstance(decorator, ast.Call) else ast.Call(func=decorator, args=[], keywords=[])
                    return call, inner
    return None


def _unwrapped_factory(factory: ast.FunctionDef) -> ast.FunctionDef:
    """The factory with each udf(...)/pandas_udf(...) wrapper replaced by the function it wraps, and UDF decorators dropped."""

    class Unwrap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if _factory_kind(node.func) is not None:
                wrapped = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "f"), None)
                if wrapped is not None:
                    return wrapped
            return node

        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
            node.decorator_list = [d for d in node.decorator_list if _factory_kind(d.func if isinstance(d, ast.Call) else d) is None]
            self.generic_visit(node)
            return node

    clone = ast.parse(ast.unparse(factory)).body[0]
    assert isinstance(clone, ast.FunctionDef)
    clone.decorator_list = [d for d in clone.decorator_list if _factory_kind(d.func if isinstance(d, ast.Call) else d) is None]
    clone.body = [Unwrap().visit(statement) for statement in clone.body]
    return ast.fix_missing_locations(clone)


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _registered_name(node: ast.Call) -> str | None:
    """The SQL name of `spark.udf.register("name", ...)` or `register(name="name", ...)`; None when it is not a literal."""
    first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _factory_kind(node: ast.expr) -> str | None:
    name = _last_name(node)
    return UDF_FACTORIES.get(name or "")


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _dotted(node: ast.expr) -> str:
    return ast.unparse(node)


def _int_constant(node: ast.expr | None, default: int) -> int:
    if node is None:
        return default
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    raise _UnreadableType(ast.unparse(node))


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _pandas_form(function_type: ast.expr | None, function, line: int) -> tuple[str | None, str | None]:
    """(the pandas UDF's form, None) or (None, why it cannot be taken), read from functionType, else from hints as Spark reads them."""
    name = None
    if function_type is not None:
        literal = function_type.value if isinstance(function_type, ast.Constant) else None
        name = PANDAS_EVAL_TYPES.get(literal) if isinstance(literal, int) else literal if isinstance(literal, str) else _last_name(function_type)
        if name not in PANDAS_FUNCTION_TYPES:
            return None, f"cannot read the pandas UDF type {ast.unparse(function_type)!r} at line {line}; write PandasUDFType.SCALAR or SCALAR_ITER, or use type hints."
    elif isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        hints = [a.annotation for a in function.args.args]
        returns = _last_name(_outer(function.returns)) if function.returns is not None else None
        if hints and hints[0] is not None and _last_name(_outer(hints[0])) == "Iterator":
            name = "SCALAR_ITER" if returns in (None, "Iterator") else "GROUPED_AGG"
        elif function.returns is not None and all(h is not None for h in hints) and _last_name(_outer(function.returns)) not in ("Series", "DataFrame", "Iterator"):
            name = "GROUPED_AGG"  # Series (or an iterator of them) to a scalar
    form = PANDAS_FUNCTION_TYPES.get(name or "SCALAR")
    if form is None:
        return None, (
            f"unsupported UDF form at line {line}: {name} pandas UDFs take and return whole frames, not column values; aether-mcp converts "
            "scalar (Series to Series), iterator (Iterator[Series] to Iterator[Series]) and Series-to-scalar pandas UDFs."
        )
    if form == "aggregate" and isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.args.args and _last_name(_outer(function.args.args[0].annotation)) == "Iterator":
        return None, (
            f"unsupported UDF form at line {line}: an iterator aggregation (Iterator[pd.Series] to a scalar); aether-mcp takes Series-to-scalar "
            "aggregations, scalar and iterator pandas UDFs, and row UDFs."
        )
    return form, None


def _outer(annotation: ast.expr) -> ast.expr:
    """`Iterator` of `Iterator[pd.Series]`; a string annotation parsed first."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return annotation
    return annotation.value if isinstance(annotation, ast.Subscript) else annotation


def _iterator_columns(function: ast.FunctionDef) -> list[str]:
    """Column names of an iterator pandas UDF: its loop's target names (`for a, b in batches`), else batches_0, batches_1..."""
    param = function.args.args[0]
    annotation = param.annotation
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    element = annotation.slice if isinstance(annotation, ast.Subscript) else None
    count = len(element.slice.elts) if isinstance(element, ast.Subscript) and _last_name(element.value) == "Tuple" and isinstance(element.slice, ast.Tuple) else 1
    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name) and node.iter.id == param.arg:
            names = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
            if annotation is None:
                count = len(names)  # no hint: the loop unpacks one Series per column
            if len(names) == count and all(isinstance(n, ast.Name) for n in names):
                return [n.id for n in names]
    return [param.arg] if count == 1 else [f"{param.arg}_{i}" for i in range(count)]


def _same_type(a: T.DataType | None, b: T.DataType | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and type_name(a) == type_name(b))


# ---------------------------------------------------------------------------------------------
# Extraction


def _function_code(definition: UdfDefinition, lines: list[str]) -> str:
    if definition.factory is not None and definition.factory_call is not None:
        # The factory as plain Python (its UDF wrapper removed), then the job's own call of it: the closure is the UDF.
        plain = _unwrapped_factory(definition.factory)
        return f"{ast.unparse(plain)}\n\n\n{definition.function_name} = {ast.unparse(definition.factory_call)}"
    function = definition.function
    if isinstance(function, ast.Lambda):
        stub = ast.parse(f"def {definition.function_name}(): pass").body[0]
        assert isinstance(stub, ast.FunctionDef)
        stub.args = function.args
        stub.body = [ast.Return(value=function.body)]
        return ast.unparse(ast.fix_missing_locations(stub))
    kept = [d for d in function.decorator_list if _factory_kind(d.func if isinstance(d, ast.Call) else d) is None]
    decorators = [textwrap.dedent("\n".join(lines[d.lineno - 1 : d.end_lineno])).strip() for d in kept]
    body = textwrap.dedent("\n".join(lines[function.lineno - 1 : function.end_lineno]))
    code = "\n".join([f"@{d.lstrip('@')}" for d in decorators] + [body])
    if not _same_function(code, function, kept):
        # Text that does not dedent cleanly (odd multi-line strings): regenerate it instead.
        clone = ast.parse(ast.unparse(function)).body[0]
        assert isinstance(clone, (ast.FunctionDef, ast.AsyncFunctionDef))
        clone.decorator_list = kept
        return ast.unparse(clone)
    return code


def _same_function(code: str, function: ast.FunctionDef, kept: list[ast.expr]) -> bool:
    try:
        parsed = ast.parse(code).body
    except SyntaxError:
        return False
    if len(parsed) != 1 or not isinstance(parsed[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    original = ast.parse(ast.unparse(function)).body[0]
    assert isinstance(original, (ast.FunctionDef, ast.AsyncFunctionDef))
    original.decorator_list = kept
    return ast.dump(parsed[0]) == ast.dump(ast.parse(ast.unparse(original)).body[0])


def _referenced_globals(code: str) -> set[str]:
    """Names a snippet of module-level code reads from module scope (symtable's scoping rules)."""
    table = symtable.symtable(code, "<extracted>", "exec")
    names: set[str] = set()

    def visit(scope: symtable.SymbolTable, top: bool) -> None:
        for symbol in scope.get_symbols():
            if top and symbol.is_referenced():
                names.add(symbol.get_name())
            elif not top and symbol.is_global() and symbol.is_referenced():
                names.add(symbol.get_name())
        for child in scope.get_children():
            visit(child, False)

    visit(table, True)
    return names


class _ModuleIndex:
    """Top-level statements of the module and which names each binds or mutates."""

    def __init__(self, tree: ast.Module, lines: list[str]) -> None:
        self.lines = lines
        self.statements: list[ast.stmt] = [s for s in tree.body if not _is_main_guard(s)]
        self.bindings: dict[str, list[int]] = {}
        self.star_imports: set[int] = set()  # positions of `from module import *`
        for position, statement in enumerate(self.statements):
            for name in self._bound_names(statement):
                self.bindings.setdefault(name, []).append(position)

    def function_position(self, definition: UdfDefinition) -> int | None:
        for position, statement in enumerate(self.statements):
            if statement is (definition.factory or definition.function):
                return position
        return None

    def code(self, position: int) -> str:
        """The statement's source, with the comment lines directly above it (they explain it)."""
        statement = self.statements[position]
        start = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
        while start > 1 and self.lines[start - 2].startswith("#"):
            start -= 1
        return "\n".join(self.lines[start - 1 : statement.end_lineno])

    def _bound_names(self, statement: ast.stmt) -> set[str]:
        names: set[str] = set()
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                names.add(alias.asname or alias.name.split(".")[0])
            return names
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if alias.name == "*":
                    self.star_imports.add(self.statements.index(statement))
                    names.add("*")
                else:
                    names.add(alias.asname or alias.name)
            return names
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return {statement.name}
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            # `RATES.update(...)`: a module-level mutation of a needed name.
            func = statement.value.func
            while isinstance(func, ast.Attribute):
                func = func.value
            if isinstance(func, ast.Name) and isinstance(statement.value.func, ast.Attribute):
                names.add(func.id)
            return names
        for node in _walk_same_scope(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                base = node.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name):
                    names.add(base.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {a.asname or a.name.split(".")[0] for a in node.names}
        return names


def _enclosing_bindings(tree: ast.Module, definition: UdfDefinition) -> set[str]:
    """Names bound anywhere inside the function that encloses the UDF (none for a module-level UDF)."""
    if not definition.enclosing:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == definition.enclosing:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)):
                    names.add(inner.id)
                elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner is not node:
                    names.add(inner.name)
                elif isinstance(inner, ast.arg):
                    names.add(inner.arg)
                elif isinstance(inner, (ast.Import, ast.ImportFrom)):
                    names |= {a.asname or a.name.split(".")[0] for a in inner.names}
    return names


def _walk_same_scope(statement: ast.stmt):
    stack: list[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and node is not statement:
            continue
        stack.extend(ast.iter_child_nodes(node))


def _is_main_guard(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.If)
        and isinstance(statement.test, ast.Compare)
        and isinstance(statement.test.left, ast.Name)
        and statement.test.left.id == "__name__"
    )


def _filtered_import(statement: ast.stmt, needed: set[str]) -> str:
    assert isinstance(statement, (ast.Import, ast.ImportFrom))
    if isinstance(statement, ast.Import):
        aliases = [a for a in statement.names if (a.asname or a.name.split(".")[0]) in needed]
        return ast.unparse(ast.Import(names=aliases))
    aliases = [a for a in statement.names if (a.asname or a.name) in needed or a.name == "*"]
    return ast.unparse(ast.ImportFrom(module=statement.module, names=aliases, level=statement.level))


def _join_blocks(parts: list[str]) -> str:
    """Header, then imports, then the rest in source order, spaced the way PEP 8 spaces them."""
    header, body = parts[:2], parts[3:]
    imports = list(dict.fromkeys(p for p in body if p.startswith(("import ", "from "))))  # two files may import the same
    others = [p.rstrip() for p in body if not p.startswith(("import ", "from "))]
    text = "\n".join(header) + "\n\n"
    if imports:
        text += "\n".join(imports) + "\n\n"
    previous_was_block = False
    for index, block in enumerate(others):
        is_block = block.startswith(("def ", "async def ", "class ", "@"))
        if index:
            text += "\n\n\n" if (is_block or previous_was_block) else "\n"
        text += block
        previous_was_block = is_block
    return text + "\n"


def _arguments(definition: UdfDefinition, shown_as: str) -> list[UdfArgument]:
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
        return [UdfArgument(name=name, hint_type=None) for name in _iterator_columns(definition.function)]
    use_hints = definition.kind == "row"
    return [UdfArgument(name=a.arg, hint_type=hint_to_type(a.annotation) if use_hints else None) for a in params]


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
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and _last_name(node.func) == "lit"):
        return _NOT_LITERAL
    inner = node.args[0]
    if isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub) and isinstance(inner.operand, ast.Constant) and type(inner.operand.value) in (int, float):
        return -inner.operand.value
    if isinstance(inner, ast.Constant) and type(inner.value) in (int, float, str, bool):
        return inner.value
    return _NOT_LITERAL
