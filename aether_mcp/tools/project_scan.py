"""scan_project: every Python UDF under a folder of the root, whether init_workspace can take it, and what converting it would save.

For each `.py` file the UDFs init_workspace knows are found in source (decorators, `udf(fn, type)`
wrappers, `spark.udf.register`, lambdas, pandas UDFs of every kind, factories). Each is derived as
init_workspace would derive it, writing nothing, so `convertible` and `reason` are init_workspace's
answer, and `draft` is draft_candidate's. Call sites: calls of its names in its file, in the files
that import it, and in SQL strings for registered names. The payoff puts side by side the function's
own cost per row (plain Python in a child on generated rows, about a third of a second per UDF) and
this machine's per-row cost of a Python UDF in Spark (measured once, kept in the state folder).
"""

from __future__ import annotations

import ast
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp import call_scope, drafting, draws, extraction, paging
from aether_mcp.extraction.finder import UdfFinder
from aether_mcp.extraction.local_modules import LocalModules
from aether_mcp.judge.hidden_inputs import hidden_rows
from aether_mcp.judge.mined_values import mine
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import subprocess_runner
from aether_mcp.spark_types import parse_type
from aether_mcp.tools.workspaces import DEFAULT_WORKSPACES_DIR, refuse_unsupported_types
from aether_mcp.wire import value_codec
from aether_mcp.workspace import IGNORED_DIR_NAMES, STATE_DIR, derivation, state_home

MAX_FILES = 5_000
PAGE_UDFS = 25
MAX_CALL_SITES = 20
COST_ROWS = 500
COST_BUDGET_S = 0.3
OVERHEAD_ROWS = 300_000
SKIPPED_DIRS = IGNORED_DIR_NAMES | {".git", ".hg", ".venv", "venv", "env", "node_modules", "site-packages", ".tox", ".mypy_cache", "build", "dist", DEFAULT_WORKSPACES_DIR, STATE_DIR}
VECTOR_LIBRARIES = {"numpy", "pandas", "math", "cmath", "decimal"}
Target = Literal["sql", "vectorized", "unclear"]
LOAD_FAILURE = "could not be loaded or called:"  # said by spec_runner's cost mode


class ScanArgument(BaseModel):
    name: str
    type: str | None = Field(description="the Spark type, where the source says it or suggests it (type_from)")
    type_from: Literal["hint", "schema", "guess", "unknown"] = Field(description="hint: a type hint; schema: the column's type in a schema the calling file spells out; guess: how the function uses it")


class CallSite(BaseModel):
    file: str
    line: int
    code: str = Field(description="the line, trimmed")


class Payoff(BaseModel):
    python_us_per_row: float | None = Field(description="the function's own cost per row, plain Python on generated rows")
    spark_udf_us_per_row: float | None = Field(description="this machine's cost per row of a Python UDF in Spark beyond its work")
    saving_us_per_row: float | None = Field(description="what a conversion to a Spark expression would save per row: both costs together")
    note: str = Field(description="how it was measured, or why it was not")


class ScannedUdf(BaseModel):
    file: str
    line: int
    name: str
    aliases: list[str]
    form: str = Field(description="how the source makes it a UDF, e.g. @udf(...), name = udf(...), spark.udf.register")
    kind: str = Field(description="udf (row at a time) or pandas")
    pandas_form: str | None = None
    function: str
    arguments: list[ScanArgument]
    return_type: str | None
    call_sites: list[CallSite]
    call_sites_left_out: int = 0
    convertible: bool = Field(description="init_workspace takes it as it is")
    reason: str | None = Field(description="why not, in init_workspace's words, with what to pass")
    draft: str | None = Field(None, description="what draft_candidate would do once it is a workspace: draft a sql candidate, or the construct it refuses")
    init_call: str = Field(description="the init_workspace call that opens it (with guessed arg_types where the source has no hints)")
    traits: list[str] = Field(description="what the body does: branches and arithmetic, string work, regular expressions, loops, third-party libraries, ...")
    likely_target: Target
    target_why: str
    payoff: Payoff


class UnreadableFile(BaseModel):
    file: str
    reason: str


class ScanProjectResult(BaseModel):
    folder: str
    files_scanned: int
    files_with_udfs: int
    udfs_found: int
    convertible: int
    draftable: int = Field(description="UDFs draft_candidate would draft a sql candidate for")
    by_form: dict[str, int]
    by_target: dict[str, int]
    spark_udf_us_per_row: float | None = Field(description="this machine's measured per-row cost of a Python UDF in Spark, beyond its work")
    summary: list[str] = Field(description="the ranking in one line per UDF (top 10): what converting it would save")
    udfs: list[ScannedUdf] = Field(description="one page, ranked: convertible first, then by saving per row")
    unreadable: list[UnreadableFile] = Field(description="files that are not Python source this server can read (first 20)")
    offset: int
    next_offset: int | None
    more: str | None
    duration_s: float


@dataclass
class _File:
    relative: str
    path: Path
    text: str
    tree: ast.Module
    lines: list[str]
    imported_names: dict[str, tuple[str | None, int, str]] = field(default_factory=dict)  # alias -> (module, level, name)
    imported_modules: dict[str, str] = field(default_factory=dict)  # alias -> module
    calls: list[tuple[str, int, list[str | None]]] = field(default_factory=list)  # ("name" or "alias.attr", line, the column each argument names)
    schema: dict[str, str] = field(default_factory=dict)  # column -> Spark type, from the schemas the file spells out
    strings: list[tuple[str, int]] = field(default_factory=list)
    patterns: set[str] = field(default_factory=set)  # module-level names bound to re.compile(...)


_CACHE: dict[str, tuple[Any, list[ScannedUdf], dict[str, Any]]] = {}


@draws.recorded_call("scan_project")
def scan_project(root: SandboxRoot, path: str = ".", offset: int = 0) -> ScanProjectResult:
    started = time.monotonic()
    folder = root.resolve(path, what="folder")
    if not folder.is_dir():
        raise ToolError(f"{root.relative(folder)} is not a folder under the server root; pass a folder (default '.', the whole root).")
    sources, skipped = _python_files(folder)
    fingerprint = [(str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sources]
    cached = _CACHE.get(str(folder))
    if cached is not None and cached[0] == fingerprint:
        ranked, facts = cached[1], cached[2]
    else:
        ranked, facts = _scan(root, folder, sources, skipped)
        _CACHE[str(folder)] = (fingerprint, ranked, facts)
    if not 0 <= offset <= len(ranked):
        raise ToolError(f"offset {offset} is past the end of the scan ({len(ranked)} UDFs); give 0..{len(ranked)}, or a next_offset a page returned.")
    page, next_offset = paging.list_page(ranked, offset, PAGE_UDFS)
    more = paging.more_line(len(ranked) - (next_offset or 0), "UDFs", next_offset, f"scan_project({path!r}, offset={{offset}})")
    by_form: dict[str, int] = {}
    by_target: dict[str, int] = {}
    for udf in ranked:
        form = "pandas_udf" if udf.kind == "pandas" else "spark.udf.register" if udf.form == "spark.udf.register" else "udf"
        by_form[form] = by_form.get(form, 0) + 1
        by_target[udf.likely_target] = by_target.get(udf.likely_target, 0) + 1
    return ScanProjectResult(
        folder=root.relative(folder) or ".",
        files_scanned=facts["files_scanned"],
        files_with_udfs=len({u.file for u in ranked}),
        udfs_found=len(ranked),
        convertible=sum(u.convertible for u in ranked),
        draftable=sum(bool(u.draft and u.draft.startswith("drafts")) for u in ranked),
        by_form=by_form,
        by_target=by_target,
        spark_udf_us_per_row=facts["overhead_us"],
        summary=[_summary_line(rank, udf) for rank, udf in enumerate(ranked[:10], start=1)],
        udfs=page,
        unreadable=facts["unreadable"][:20],
        offset=offset,
        next_offset=next_offset,
        more=more,
        duration_s=round(time.monotonic() - started, 3),
    )


def _summary_line(rank: int, udf: ScannedUdf) -> str:
    saving = f"saves ~{udf.payoff.saving_us_per_row:.1f} us/row" if udf.payoff.saving_us_per_row is not None else "saving not measured"
    status = "ready" if udf.convertible else f"needs: {(udf.reason or '').split('. ')[0][:120]}"
    return f"{rank}. {udf.name} ({udf.file}:{udf.line}, {udf.form}) -> {udf.likely_target}; {saving}; {status}"


def _python_files(folder: Path) -> tuple[list[Path], int]:
    found: list[Path] = []
    skipped = 0
    for directory, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py"):
                if len(found) >= MAX_FILES:
                    skipped += 1
                    continue
                candidate = Path(directory) / name
                if candidate.is_file() and not candidate.is_symlink():
                    found.append(candidate)
    return found, skipped


def _scan(root: SandboxRoot, folder: Path, sources: list[Path], skipped: int) -> tuple[list[ScannedUdf], dict[str, Any]]:
    files: list[_File] = []
    unreadable: list[UnreadableFile] = []
    call_scope.report(0, 4, f"reading {len(sources)} Python files")
    for source in sources:
        relative = root.relative(source)
        try:
            text, tree = extraction.read_source(source, relative)
        except ToolError as exc:
            unreadable.append(UnreadableFile(file=relative, reason=str(exc)[:300]))
            continue
        files.append(_index(relative, source, text, tree))
    if skipped:
        unreadable.append(UnreadableFile(file=root.relative(folder) or ".", reason=f"{skipped} more .py files past the first {MAX_FILES} were not scanned; scan a sub-folder"))
    call_scope.report(1, 4, "finding the UDFs and deriving each as init_workspace would")
    found: list[tuple[ScannedUdf, derivation.Derived | None]] = []
    for file in files:
        try:
            definitions = extraction.find_udfs(file.tree, LocalModules(root.path).tree_reader(file.path))  # factories of the project's modules too
        except Exception as exc:  # noqa: BLE001  (a construct the finder cannot read is reported, not fatal)
            unreadable.append(UnreadableFile(file=file.relative, reason=f"UDFs could not be read: {type(exc).__name__}: {str(exc)[:200]}"))
            continue
        for definition in definitions:
            found.append(_scanned(root, file, definition, files))
    call_scope.report(2, 4, f"timing {len(found)} UDF functions on generated rows (plain Python, no Spark)")
    costs = _python_costs(found)
    overhead_s, overhead_note = spark_udf_overhead() if found else (None, "")
    call_scope.report(3, 4, "ranking")
    overhead_us = None if overhead_s is None else overhead_s * 1e6
    ranked: list[ScannedUdf] = []
    for (udf, _derived), (cost_s, note) in zip(found, costs):
        python_us = None if cost_s is None else cost_s * 1e6
        saving = None if python_us is None or overhead_us is None else python_us + overhead_us
        notes = [note] + ([overhead_note] if overhead_note else [])
        udf.payoff = Payoff(
            python_us_per_row=None if python_us is None else round(python_us, 3),
            spark_udf_us_per_row=None if overhead_us is None else round(overhead_us, 3),
            saving_us_per_row=None if saving is None else round(saving, 3),
            note="; ".join(n for n in notes if n),
        )
        if udf.convertible and LOAD_FAILURE in note:
            # init_workspace loads the extracted module in a child before it creates anything, and refuses it for this
            udf.convertible, udf.draft = False, None
            udf.reason = f"its module does not load where the server runs ({note.split(LOAD_FAILURE, 1)[1].strip()}); init_workspace refuses it until it does: install what it imports, then scan again."
        ranked.append(udf)
    ranked.sort(key=lambda u: (not u.convertible, -(u.payoff.saving_us_per_row or -1.0), u.file, u.line))
    call_scope.report(4, 4, "done")
    return ranked, {"files_scanned": len(sources), "unreadable": unreadable, "overhead_us": None if overhead_us is None else round(overhead_us, 3)}


def _index(relative: str, path: Path, text: str, tree: ast.Module) -> _File:
    file = _File(relative, path, text, tree, text.splitlines())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                file.imported_names[alias.asname or alias.name] = (node.module, node.level, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                file.imported_modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                file.calls.append((node.func.id, node.lineno, [_column_name(a) for a in node.args]))
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                file.calls.append((f"{node.func.value.id}.{node.func.attr}", node.lineno, [_column_name(a) for a in node.args]))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "(" in node.value:
            file.strings.append((node.value, node.lineno))
    file.schema = _schema_columns(tree)
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call) and ast.unparse(statement.value.func) in ("re.compile", "compile"):
            file.patterns |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
    return file


def _scanned(root: SandboxRoot, file: _File, definition: extraction.UdfDefinition, files: list[_File]) -> tuple[ScannedUdf, derivation.Derived | None]:
    selector = f"{definition.name}:{definition.line}"
    hinted = _hinted_arguments(root, file, definition)
    guesses: dict[str, str] = {}
    derived: derivation.Derived | None = None
    reason: str | None = None
    sites, typed_calls = _call_sites(file, definition, files)
    from_schema = _schema_types(hinted, typed_calls)
    try:
        derived = derivation.derive(root, file.relative, selector)
        refuse_unsupported_types(derived.config)
    except ToolError as exc:
        reason = str(exc)
        derived = None
        missing = [a for a in hinted if a.type is None]
        guesses = {a.name: from_schema.get(a.name) or guess[0] for a in missing if a.name in from_schema or (guess := derivation.guessed_type(definition.function, a.name)) is not None}
        if missing and len(guesses) == len(missing):
            try:  # typed as guessed: enough to time the function, never to convert without the user's word
                derived = derivation.derive(root, file.relative, selector, arg_types=guesses)
                refuse_unsupported_types(derived.config)
            except ToolError:
                derived = None
    arguments = [
        ScanArgument(name=a.name, type=a.type, type_from="hint")
        if a.type is not None
        else ScanArgument(name=a.name, type=guesses.get(a.name), type_from="schema" if a.name in from_schema else "guess" if a.name in guesses else "unknown")
        for a in hinted
    ]
    traits, target, why = _traits(root, file, definition)
    init_call = f"init_workspace(source={file.relative!r}, udf={selector!r}" + (f", arg_types={json.dumps(guesses)}" if guesses else "") + ")"
    udf = ScannedUdf(
        file=file.relative,
        line=definition.line,
        name=definition.name,
        aliases=sorted(definition.aliases - {definition.name}),
        form=definition.form,
        kind=definition.kind,
        pandas_form=definition.pandas_form,
        function=definition.function_name,
        arguments=arguments,
        return_type=derived.config.udf.return_type if derived is not None else (derivation.type_name(definition.return_type) if definition.return_type is not None else None),
        call_sites=sites[:MAX_CALL_SITES],
        call_sites_left_out=max(0, len(sites) - MAX_CALL_SITES),
        convertible=reason is None,
        reason=reason,
        draft=drafting.outlook(derived.module_source, derived.config.udf) if reason is None and derived is not None else None,
        init_call=init_call,
        traits=traits,
        likely_target=target,
        target_why=why,
        payoff=Payoff(python_us_per_row=None, spark_udf_us_per_row=None, saving_us_per_row=None, note=""),
    )
    return udf, derived


def _schema_types(hinted: list[_Hinted], typed_calls: list[list[str | None]]) -> dict[str, str]:
    """Types for the arguments without hints from the schemas of the calls' columns, where every call that says one agrees."""
    types: dict[str, str] = {}
    for position, argument in enumerate(hinted):
        said = {call[position] for call in typed_calls if position < len(call) and call[position]}
        if argument.type is None and len(said) == 1:
            types[argument.name] = said.pop()
    return types


@dataclass
class _Hinted:
    name: str
    type: str | None


def _hinted_arguments(root: SandboxRoot, file: _File, definition: extraction.UdfDefinition) -> list[_Hinted]:
    """The UDF's arguments as init_workspace names them (a pandas iterator UDF's are its columns), with their hinted types."""
    try:
        extracted = extraction.extract_udf(file.text, file.tree, definition, file.relative, path=file.path, modules=LocalModules(root.path))
    except Exception:  # noqa: BLE001  (derive says why; the parameters are the best names left)
        function = definition.function
        if function is None:
            return []
        hinted = isinstance(function, ast.FunctionDef)
        return [_Hinted(a.arg, extraction.hint_to_type(a.annotation) if hinted else None) for a in function.args.posonlyargs + function.args.args]
    return [_Hinted(a.name, a.hint_type) for a in extracted.arguments]


def _call_sites(file: _File, definition: extraction.UdfDefinition, files: list[_File]) -> tuple[list[CallSite], list[list[str | None]]]:
    """Where the UDF is called, and for each call the Spark type of each argument's column where a schema in that file says it."""
    names = {definition.name} | definition.aliases
    stem = Path(file.relative).stem
    dotted = file.relative[:-3].replace("/", ".")
    sites: list[CallSite] = []
    typed: list[list[str | None]] = []

    def add(where: _File, line: int, columns: list[str | None] | None = None) -> None:
        code = where.lines[line - 1].strip() if 0 < line <= len(where.lines) else ""
        sites.append(CallSite(file=where.relative, line=line, code=code[:160]))
        if columns is not None:
            typed.append([where.schema.get(column) or file.schema.get(column) if column else None for column in columns])

    def is_this_module(module: str | None) -> bool:
        return module is not None and (module == stem or module == dotted or dotted.endswith("." + module) or module.endswith("." + stem))

    for other in files:
        here = other is file
        local = {alias for alias, (module, _level, name) in other.imported_names.items() if name in names and is_this_module(module)}
        module_aliases = {alias for alias, module in other.imported_modules.items() if is_this_module(module)}
        module_aliases |= {alias for alias, (module, _level, name) in other.imported_names.items() if name == stem}
        for called, line, columns in other.calls:
            head, _, attr = called.partition(".")
            if (here and not attr and called in names) or (not attr and called in local) or (attr and head in module_aliases and attr in names):
                add(other, line, columns)
        if definition.form == "spark.udf.register":
            needle = f"{definition.name}("
            for text, line in other.strings:
                if needle in text:
                    add(other, line)
    order = sorted(range(len(sites)), key=lambda i: (sites[i].file, sites[i].line))
    return [sites[i] for i in order], typed


def _column_name(node: ast.expr) -> str | None:
    """The column an argument of a UDF call names: "c", col("c"), F.col("c"), df.c, df["c"]; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        if ast.unparse(node.func).split(".")[-1] in ("col", "column"):
            return node.args[0].value
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr
    return None


def _schema_columns(tree: ast.Module) -> dict[str, str]:
    """Column -> Spark type from every schema the file spells out: DDL strings ("day date, price double") and
    StructType([StructField(...)]) literals. A column two schemas type differently is left out."""
    found: dict[str, set[str]] = {}
    finder = UdfFinder(tree)
    for node in ast.walk(tree):
        struct = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value.strip() and "\n" not in node.value:
            struct = _ddl_struct(node.value)
        elif isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "StructType":
            try:
                struct = finder.read_type(node, set())
            except Exception:  # noqa: BLE001  (a schema built at run time says nothing here)
                struct = None
        for column in getattr(struct, "fields", None) or []:
            found.setdefault(column.name, set()).add(derivation.type_name(column.dataType))
    return {column: next(iter(types)) for column, types in found.items() if len(types) == 1}


def _ddl_struct(text: str) -> Any:
    """`"day date, price double"` as a struct type, or None when the text is not a DDL column list."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "<("
        depth -= char in ">)"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    fields = []
    for part in parts:
        words = part.strip().split(None, 1)
        if len(words) != 2 or not words[0].isidentifier():
            return None
        fields.append(f"`{words[0]}`:{words[1].strip()}")
    try:
        return parse_type(f"struct<{','.join(fields)}>")
    except Exception:  # noqa: BLE001
        return None


STDLIB = frozenset(sys.stdlib_module_names)


def _library(root: SandboxRoot, file: _File, node: ast.AST) -> str | None:
    """The third-party library `node` names (a module the file imports that is neither the standard library, NumPy/pandas,
    PySpark nor one of the project's own modules), or None."""
    module, level = None, 0
    if isinstance(node, ast.Name):
        if node.id in file.imported_modules:
            module = file.imported_modules[node.id]
        elif node.id in file.imported_names:
            module, level, _name = file.imported_names[node.id]
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        level = getattr(node, "level", 0) or 0
        module = getattr(node, "module", None) or node.names[0].name
    top = (module or "").split(".")[0]
    if not top or level or top in STDLIB or top in VECTOR_LIBRARIES or top == "pyspark":
        return None
    if LocalModules(root.path).find(file.path, module, 0) is not None:
        return None
    return top


def _traits(root: SandboxRoot, file: _File, definition: extraction.UdfDefinition) -> tuple[list[str], Target, str]:
    function = definition.function
    if function is None:
        return ["body not in this file"], "unclear", "the function's body is defined elsewhere; scan its own file"
    nodes = list(ast.walk(function))
    third_party = {top for top in (_library(root, file, node) for node in nodes) if top}
    loops = any(isinstance(n, (ast.For, ast.While, ast.comprehension)) for n in nodes)
    strings = any(isinstance(n, ast.Attribute) and n.attr in derivation.STRING_METHODS for n in nodes) or any(isinstance(n, ast.JoinedStr) for n in nodes)
    regex = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "re" for n in nodes) or any(
        isinstance(n, ast.Name) and n.id in file.patterns for n in nodes
    )
    vector = any(isinstance(n, ast.Name) and (file.imported_modules.get(n.id, "").split(".")[0] in {"numpy", "pandas"}) for n in nodes)
    handles = any(isinstance(n, (ast.Try, ast.Raise)) for n in nodes)
    dates = any(isinstance(n, ast.Name) and n.id in {"datetime", "date", "timedelta", "dt"} for n in nodes)
    traits = [
        trait
        for trait, present in [
            ("branches and arithmetic", not loops and not strings and not third_party),
            ("string work", strings),
            ("regular expressions", regex),
            ("loops", loops),
            ("numpy/pandas", vector),
            ("dates and times", dates),
            ("raises or catches exceptions", handles),
            (f"third-party libraries ({', '.join(sorted(third_party))})", bool(third_party)),
        ]
        if present
    ]
    if definition.kind == "pandas":
        return traits, ("unclear" if third_party else "sql"), "already vectorized (a pandas UDF): the gain is a Spark expression without Arrow transfers, where one exists"
    if third_party:
        return traits, "unclear", f"it calls {', '.join(sorted(third_party))}: a conversion must reproduce that library's behaviour exactly"
    if loops:
        return traits, "vectorized", "loops over values: whole-column NumPy/pandas (or Spark higher-order functions) rather than one expression"
    if strings or regex or dates:
        return traits, "sql", "string, regex and date work maps onto Spark's built-in functions (mind the semantic traps note)"
    return traits, "sql", "branches and arithmetic map onto when/otherwise and Spark's operators"


def _python_costs(found: list[tuple[ScannedUdf, derivation.Derived | None]]) -> list[tuple[float | None, str]]:
    """Seconds per row of each UDF's Python function, measured in one child process; (None, why) where not."""
    subjects, results = [], [(None, "")] * len(found)
    for index, (udf, derived) in enumerate(found):
        if derived is None:
            unknown = [a.name for a in udf.arguments if a.type is None]
            results[index] = (None, f"not timed: the types of {', '.join(unknown)} are unknown" if unknown else "not timed: init_workspace cannot take it (see reason)")
            continue
        config = derived.config
        try:
            rows = hidden_rows(config, mine(derived.module_source), COST_ROWS, draws.seed("scan_project.cost_rows"))
        except Exception as exc:  # noqa: BLE001
            results[index] = (None, f"not timed: no rows could be generated for its types ({type(exc).__name__})")
            continue
        subjects.append({
            "id": index,
            "source": derived.module_source,
            "module_path": f"<scan:{udf.file}:{udf.line}>",
            "function": config.udf.function,
            "kind": config.udf.kind,
            "pandas_form": config.udf.pandas_form,
            "return_type": config.udf.return_type,
            "use_arrow": config.udf.use_arrow,
            "arg_types": [a.type for a in config.udf.args],
            "inputs": rows,
        })
    if not subjects:
        return results
    work = Path(tempfile.mkdtemp(prefix="aether-scan-"))
    try:
        job = {"mode": "cost", "budget_s": COST_BUDGET_S, "subjects": subjects}
        (work / "job.json").write_text(json.dumps(value_codec.encode(job)), encoding="utf-8")
        argv = [sys.executable, "-I", "-B", "-m", "aether_mcp.reference.spec_runner", str(work / "job.json"), str(work / "result.json")]
        limit = 30 + len(subjects) * (COST_BUDGET_S * 4 + 2)
        outcome = subprocess_runner.run(argv, cwd=work, log_path=work / "cost.log", timeout_s=limit, env_extra={"PYTHONHASHSEED": "0", "TZ": "UTC"})
        if outcome.cancelled:
            raise ToolError("scan_project was cancelled while timing the UDF functions; call it again to scan.")
        if outcome.returncode != 0 or not (work / "result.json").exists():
            why = f"the timing process {'timed out' if outcome.timed_out else f'exited with code {outcome.returncode}'}: {outcome.tail[-300:]!r}"
            return [(None, f"not timed: {why}") if r == (None, "") else r for r in results]
        measured = value_codec.decode(json.loads((work / "result.json").read_text(encoding="utf-8")))["measured"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for entry in measured:
        seconds = entry["seconds_per_row"]
        note = f"timed on {entry['rows_timed']} generated rows ({entry['raised']} raised)" if seconds is not None else ""
        if entry["problem"]:
            note = f"{note}; {entry['problem']}" if note else f"not timed: {entry['problem']}"
        results[entry["id"]] = (seconds if seconds is not None and entry["raised"] < entry["rows_timed"] else None, note)
    return results


def _overhead_key() -> str:
    try:
        from importlib.metadata import version

        pyspark = version("pyspark")
    except Exception:  # noqa: BLE001
        pyspark = "?"
    return f"{platform.node()}|{os.cpu_count()}|{sys.version_info[:2]}|pyspark {pyspark}"


def spark_udf_overhead() -> tuple[float | None, str]:
    """Seconds per row a Python UDF costs in Spark on this machine beyond its own work (measured once, then kept), and a note."""
    cache = state_home() / "udf_overhead.json"
    key = _overhead_key()
    try:
        stored = json.loads(cache.read_text(encoding="utf-8"))
        if stored.get("key") == key and isinstance(stored.get("seconds_per_row"), float):
            return stored["seconds_per_row"], ""
    except (OSError, ValueError):
        pass
    work = Path(tempfile.mkdtemp(prefix="aether-overhead-"))
    try:
        call_scope.report(2, 4, "measuring once what a Python UDF costs per row in Spark on this machine (about 20 s)")
        argv = [sys.executable, "-I", "-B", "-m", "aether_mcp.reference.udf_overhead", str(work / "result.json"), str(OVERHEAD_ROWS)]
        outcome = subprocess_runner.run(argv, cwd=work, log_path=work / "overhead.log", timeout_s=180, env_extra={"TZ": "UTC"})
        if outcome.cancelled:
            raise ToolError("scan_project was cancelled while measuring Spark's per-row UDF cost; call it again to scan.")
        if outcome.returncode != 0 or not (work / "result.json").exists():
            return None, f"Spark's per-row UDF cost could not be measured ({'timed out' if outcome.timed_out else f'exit {outcome.returncode}'}: {outcome.tail[-200:]!r}); is Java 17+ installed?"
        measured = json.loads((work / "result.json").read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({**measured, "key": key, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}), encoding="utf-8")
    return float(measured["seconds_per_row"]), ""
