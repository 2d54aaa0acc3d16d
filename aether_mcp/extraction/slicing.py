"""Extraction proper (`extract_udf`, `udf_module`): the module-level imports, constants, helpers and classes a UDF uses,
transitively, and nothing else, sliced from the job (and its own modules) into one plain module."""

from __future__ import annotations

import ast
import builtins
import hashlib
import symtable
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.extraction.arguments import arguments_of, literal_arguments
from aether_mcp.extraction.definitions import SPARK_STATE_MARKERS, ExtractedUdf, ImportedName, UdfDefinition, imported_name, read_source
from aether_mcp.extraction.factories import factory_function_name, factory_kind, unwrapped_factory
from aether_mcp.extraction.finder import find_spark_conf, find_udfs
from aether_mcp.extraction.local_modules import LocalModules


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
    callers: list[tuple[str, ast.Module, set[str]]] | None = None,
) -> ExtractedUdf:
    """Build the module text for original/udf.py and read the UDF's arguments and confs.

    With `path` and `modules`, what the UDF uses from the job's own modules (`from geo import
    haversine`, `from .patterns import SALARY_RE`, `import config` then `config.RATE`) is followed
    into those files and extracted from them too, into the one module.
    """
    job = SourceFile(shown_as, text, tree, path)
    return _Extraction(job, definition, modules, callers or []).run()


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

    def __init__(self, job: SourceFile, definition: UdfDefinition, modules: LocalModules | None, callers: list[tuple[str, ast.Module, set[str]]]) -> None:
        self.job = job
        self.callers = callers  # the project's other files that import and call the UDF (literal arguments)
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
        elif definition.factory is not None and definition.imported is not None:
            home, _ = self._imported_function(self.job, definition.imported, 0)  # a factory from the job's own module: its names are read there
        if definition.function is None or definition.return_type is None:
            raise ToolError(definition.return_type_error or f"cannot read the return type of UDF {definition.name!r}.")
        self.home = home
        function_code = _function_code(definition, home.index.lines)
        self.home_position = home.index.function_position(definition)
        self.seen.add((home, definition.function_name))
        if definition.factory is not None:  # the factory's plain function is in function_code
            self.seen.add((home, factory_function_name(definition)))
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
        arguments = arguments_of(definition, self.job.shown)
        used = [file for file in order if file is not self.job]
        return ExtractedUdf(
            definition=definition,
            module_source=module_source,
            arguments=arguments,
            spark_conf=find_spark_conf(self.job.tree),
            literal_arguments=literal_arguments(self.job.tree, definition, len(arguments), self.callers),
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


def _function_code(definition: UdfDefinition, lines: list[str]) -> str:
    if definition.factory is not None and definition.factory_call is not None:
        # The factory as plain Python (its UDF wrapper removed), then the job's own call of it: the closure is the UDF.
        plain = unwrapped_factory(definition.factory)
        plain.name = factory_function_name(definition)
        call = definition.factory_call
        if not (isinstance(call.func, ast.Name) and call.func.id == plain.name):  # a static method, or a factory imported under another name
            call = ast.Call(func=ast.Name(id=plain.name, ctx=ast.Load()), args=call.args, keywords=call.keywords)
        return f"{ast.unparse(plain)}\n\n\n{definition.function_name} = {ast.unparse(call)}"
    function = definition.function
    if isinstance(function, ast.Lambda):
        stub = ast.parse(f"def {definition.function_name}(): pass").body[0]
        assert isinstance(stub, ast.FunctionDef)
        stub.args = function.args
        stub.body = [ast.Return(value=function.body)]
        return ast.unparse(ast.fix_missing_locations(stub))
    kept = [d for d in function.decorator_list if factory_kind(d.func if isinstance(d, ast.Call) else d) is None]
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
