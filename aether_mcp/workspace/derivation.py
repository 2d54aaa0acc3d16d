"""What a workspace's protected files must be, derived again from the job's source: the basis of trust without a key.

`init_workspace` derives `original/udf.py` and `aether.toml` from the job source (plus the
argument types, return type, benchmark master and backend it was given). `rederive` repeats that
from the job source named in `aether.toml`, so a workspace can be checked from first principles:
by `aether-mcp verify`, and by a server whose signing key is not the one the manifest was signed
with (another HOME or state folder), which then re-signs what it could re-derive.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp import extraction
from aether_mcp.extraction.factories import call_sites, factory_named
from aether_mcp.extraction.local_modules import LocalModules
from aether_mcp.lazy_import import lazy_module
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.spark_types import UnknownSparkType, parse_type, type_name
from aether_mcp.workspace.config import (
    CONFIG_FILE,
    ORIGINAL_DIR,
    ORIGINAL_MODULE,
    BackendConfig,
    BenchmarkConfig,
    UdfArgConfig,
    UdfConfig,
    WorkspaceConfig,
)

T = lazy_module("pyspark.sql.types")

DEFAULT_SPARK_CONF = {"spark.sql.session.timeZone": "UTC"}
GROUPS_NOTE = (
    "{name} is a Series-to-scalar aggregation: Spark calls it once per group of groupBy().agg(). Here a row is one group, and each argument "
    "holds that group's values of its column ({args}); a row's arrays are zipped as arrays_zip zips them (a shorter one padded with nulls), "
    "and a null or empty array makes no group (both sides then report EmptyGroup). A sql candidate's build(*cols) returns an aggregate "
    "Column over the columns (e.g. F.max(c) - F.min(c)); a vectorized evaluate(*series) returns one value for a group's Series."
)
WIDENED = "widened by init_workspace(whole_domain=...): drawn over its whole type, although the job passes only literals"


@dataclass
class Derived:
    config: WorkspaceConfig
    module_source: str
    extracted: extraction.ExtractedUdf | None = None
    source_path: Path | None = None


@dataclass
class Rederivation:
    """A workspace compared with what its job source gives now."""

    matches: bool
    problems: list[str]
    derived: Derived | None


def derive(
    root: SandboxRoot,
    source: str,
    udf: str,
    arg_types: dict[str, str] | None = None,
    return_type: str | None = None,
    benchmark_master: str | None = None,
    backend: str = "auto",
    whole_domain: list[str] | None = None,
) -> Derived:
    """The config and reference module init_workspace writes for `udf` in `source` (ToolError when it cannot).

    `whole_domain`: arguments the job passes only as literals that are still drawn over their whole type.
    """
    source_path = root.resolve(source, what="source")
    shown = root.relative(source_path)
    text, tree = extraction.read_source(source_path, shown)
    modules = LocalModules(root.path)
    notes: list[str] = []
    found = extraction.find_udfs(tree, modules.tree_reader(source_path))
    try:
        definition = extraction.select_udf(found, udf, shown)
    except ToolError:
        # `from udfs import clean_name` where udfs.py defines the UDF: the workspace's source is that module
        elsewhere = extraction.udf_module(tree, udf, source_path, modules)
        if elsewhere is None:
            wanted = udf.partition(":")[0].strip()
            if not any(wanted == d.name or wanted in d.aliases for d in found):  # not found, rather than ambiguous
                _refuse_a_factory(root, tree, udf, shown)
            raise
        job_shown, source_path, shown = shown, elsewhere, root.relative(elsewhere)
        text, tree = extraction.read_source(source_path, shown)
        definition = extraction.select_udf(extraction.find_udfs(tree), udf, shown)
        notes.append(f"{job_shown} imports UDF {udf!r} from {shown}, which defines it: the workspace's source is {shown}")
    if return_type is not None:
        definition.return_type = parse_type_argument(return_type, "return_type")
        definition.return_type_error = None
    callers = _callers(root, modules, source_path, definition.name)  # the project's other files that call it: their literal arguments count
    extracted = extraction.extract_udf(text, tree, definition, shown, path=source_path, modules=modules, callers=callers)
    extracted.notes = notes + extracted.notes
    if extracted.local_modules:
        extracted.notes.append(
            f"original/udf.py holds what the UDF uses from the job's own module(s) {', '.join(sorted(extracted.local_modules))}; "
            "their sha256 digests are in aether.toml, and aether-mcp verify fails the reference when any of them changed"
        )
    arguments = argument_types(extracted, arg_types or {})
    if definition.pandas_form == "aggregate":
        for argument in arguments:
            argument.type = f"array<{argument.type}>"
        extracted.notes.append(GROUPS_NOTE.format(name=definition.name, args=", ".join(f"{a.name} {a.type}" for a in arguments)))
    literal_domains(arguments, extracted.literal_arguments, whole_domain or [], shown)
    literal = [a for a in arguments if a.values is not None and a.values_from != WIDENED]
    if literal:
        extracted.notes.append(
            "drawn only from the literals the job passes: "
            + "; ".join(f"{a.name} = {', '.join(repr(v) for v in a.values[:5])}{' ...' if len(a.values) > 5 else ''} ({a.values_from.partition('(')[2].rstrip(')')})" for a in literal)
            + f". If other callers pass other values, init_workspace again with whole_domain={[a.name for a in literal]}"
        )
    config = WorkspaceConfig(
        udf=UdfConfig(
            name=definition.name,
            function=definition.function_name,
            kind=definition.kind,  # type: ignore[arg-type]
            pandas_form=definition.pandas_form,  # type: ignore[arg-type]
            return_type=type_name(definition.return_type),  # type: ignore[arg-type]
            args=arguments,
            source=shown,
            modules=extracted.local_modules,
            source_line=definition.line,
            form=definition.form,
            use_arrow=definition.use_arrow,
        ),
        benchmark=BenchmarkConfig(master=benchmark_master),
        backend=BackendConfig(use=backend),  # type: ignore[arg-type]
    )
    config.spark.conf = {**DEFAULT_SPARK_CONF, **extracted.spark_conf}
    return Derived(config, extracted.module_source, extracted, source_path)


def _refuse_a_factory(root: SandboxRoot, tree: ast.Module, udf: str, shown: str) -> None:
    """A ToolError that says so when `udf` names a UDF factory: the UDF is what a call of it makes, and where the calls are."""
    name = udf.partition(":")[0].strip()
    if factory_named(tree, name) is None:
        return
    sites = call_sites([(shown, text) for shown, _, text in _project_files(root, name.rpartition(".")[2])[0]], name)
    raise ToolError(
        f"{name!r} in {shown} is a UDF factory: it returns a UDF, made when it is called. init_workspace takes the UDF a call with literal "
        f"arguments makes: point source at the file with the call and pass the name the result is given (fee = {name}(2.5) gives udf='fee'), "
        f"or the factory's name where the call is inline ({name}(2.5)(F.col('x'))). "
        + (f"Its calls under the root: {'; '.join(sites)}." if sites else "No call of it was found under the server's root.")
    )


SKIPPED_FOLDERS = {"aether_workspaces", "__pycache__", "node_modules", "venv", "site-packages", "tests", "test"}
MAX_FOLDERS = 2000
MAX_CALLER_FILES = 200


def _project_files(root: SandboxRoot, mentioning: str) -> tuple[list[tuple[str, Path, str]], bool]:
    """(shown, path, text) of the job files under the root whose text mentions `mentioning`, in a stable order, and
    whether every folder was looked in (at most MAX_FOLDERS are: a root may be large).

    Left out: hidden folders, virtual environments, test folders and test files (their calls are not the job's),
    and every workspace (a folder holding aether.toml), whose files an agent writes."""
    found = []
    for seen, (folder, subfolders, names) in enumerate(os.walk(root.path)):
        if seen >= MAX_FOLDERS:
            return found, False
        if "aether.toml" in names:
            subfolders[:] = []
            continue
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in SKIPPED_FOLDERS)
        for file_name in sorted(n for n in names if n.endswith(".py") and not n.startswith("test_") and not n.endswith("_test.py") and n != "conftest.py"):
            path = Path(folder) / file_name
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if mentioning in text:
                found.append((root.relative(path), path, text))
    return found, True


def _callers(root: SandboxRoot, modules: LocalModules, source_path: Path, udf_name: str) -> list[tuple[str, ast.Module, set[str]]]:
    """The project's other files that import UDF `udf_name` from `source_path`, each with the names they import it as.

    Empty (so only the defining file's calls count, as before) unless every reference to the UDF in those files is a
    direct call: a file that passes it on as a value, registers it, or reads it as an attribute of the module
    (`udfs.fee(...)`) may call it with anything, and so may a file in a folder the walk did not reach."""
    files, complete = _project_files(root, udf_name)
    if not complete or len(files) > MAX_CALLER_FILES:  # parsing them all would take long: nothing is narrowed
        return []
    callers = []
    target = source_path.resolve()
    mention = re.compile(rf"\b{re.escape(udf_name)}\b")
    for shown, path, text in files:
        if path.resolve() == target or not mention.search(text):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        names, module_names = set(), set()
        for statement in ast.walk(tree):
            if isinstance(statement, ast.ImportFrom) and modules.find(path, statement.module, statement.level) == target:
                names |= {alias.asname or alias.name for alias in statement.names if alias.name == udf_name}
            elif isinstance(statement, ast.Import):
                module_names |= {alias.asname or alias.name for alias in statement.names if modules.find(path, alias.name, 0) == target}
        if any(isinstance(node, ast.Attribute) and node.attr == udf_name and isinstance(node.value, ast.Name) and node.value.id in module_names for node in ast.walk(tree)):
            return []
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        if any(isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load) and id(node) not in called for node in ast.walk(tree)):
            return []
        if names:
            callers.append((shown, tree, names))
    return callers


def rederive(root: SandboxRoot, workspace: Path, config: WorkspaceConfig) -> Rederivation:
    """Whether `original/` and `aether.toml` are exactly what the job source gives for this config's UDF.

    The inputs init_workspace was given are read back from the config (argument types that came
    from arg_types, the benchmark master, the backend); the return type counts as given when the
    source does not declare the recorded one. Every other setting must be what init writes.
    """
    udf = config.udf
    grouped = udf.pandas_form == "aggregate"
    given = {a.name: a.type.removeprefix("array<").removesuffix(">") if grouped else a.type for a in udf.args if a.type_from == "arg_types"}
    widened = [a.name for a in udf.args if a.values_from == WIDENED]
    derived: Derived | None = None
    problems: list[str] = []
    for return_type in (None, udf.return_type):
        try:
            attempt = derive(root, udf.source, udf.name, given, return_type, config.benchmark.master, config.backend.use, widened)
        except ToolError as exc:
            problems = [f"the job source no longer gives this UDF: {exc}"]
            continue
        derived = attempt
        if attempt.config.udf.return_type == udf.return_type:
            break
    if derived is None:
        return Rederivation(False, problems, None)
    problems = []
    expected, actual = derived.config.model_dump(), config.model_dump()
    # The UDF may have moved within an edited job; where it is defined is not part of what it does.
    expected["udf"].pop("source_line"), actual["udf"].pop("source_line")
    for section in sorted(set(expected) | set(actual)):
        if expected.get(section) != actual.get(section):
            problems.append(f"{CONFIG_FILE} [{section}] is {actual.get(section)!r}, but the job source and init_workspace give {expected.get(section)!r}")
    module = workspace / ORIGINAL_MODULE
    try:
        current = module.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        current = None
    if current != derived.module_source:
        problems.append(f"{ORIGINAL_MODULE} differs from what {udf.source} gives for {udf.name} now")
    others = sorted(p.relative_to(workspace).as_posix() for p in (workspace / ORIGINAL_DIR).rglob("*") if p.as_posix() != module.as_posix() and not p.is_dir())
    if others:
        problems.append(f"{ORIGINAL_DIR}/ holds files extraction never writes: {', '.join(others)}")
    return Rederivation(not problems, problems, derived)


def argument_types(extracted: extraction.ExtractedUdf, arg_types: dict[str, str]) -> list[UdfArgConfig]:
    names = [a.name for a in extracted.arguments]
    unknown = sorted(set(arg_types) - set(names))
    if unknown:
        raise ToolError(f"arg_types names {', '.join(unknown)}, which the UDF does not take; its arguments are: {', '.join(names)}.")
    result: list[UdfArgConfig] = []
    missing: list[str] = []
    for argument in extracted.arguments:
        if argument.name in arg_types:
            result.append(UdfArgConfig(name=argument.name, type=type_name(parse_type_argument(arg_types[argument.name], f"arg_types[{argument.name!r}]")), type_from="arg_types"))
        elif argument.hint_type is not None:
            result.append(UdfArgConfig(name=argument.name, type=argument.hint_type, type_from="hint"))
        else:
            missing.append(argument.name)
    if missing:
        guesses = {name: guessed_type(extracted.definition.function, name) for name in missing}
        example = ", ".join(f'"{name}": "{guess[0] if guess else "?"}"' for name, guess in guesses.items())
        why = "; ".join(f"{name} {guess[1]}" if guess else f"{name}: nothing in the UDF says (the '?')" for name, guess in guesses.items())
        raise ToolError(
            f"the Spark types of argument(s) {', '.join(missing)} are unknown (no type hints in the source). "
            f"Pass arg_types with the column types your job feeds the UDF, e.g. arg_types={{{example}}}, "
            f"guessed from how the UDF uses them ({why}): check each against the job's schema "
            "(Spark DDL names: int, bigint, double, string, decimal(10,2), date, array<string>, ...)."
        )
    return result


STRING_METHODS = frozenset(
    {"strip", "lstrip", "rstrip", "lower", "upper", "split", "rsplit", "startswith", "endswith", "replace", "find", "title",
     "capitalize", "isdigit", "isalpha", "isalnum", "isspace", "zfill", "encode", "casefold", "partition", "splitlines", "format"}
)


def guessed_type(function: ast.AST | None, name: str) -> tuple[str, str] | None:
    """A likely Spark type for argument `name` from how the function uses it, with the reason; None when nothing says.

    Only for the example in an error message: Spark feeds the UDF the job's column, whatever this guesses.
    """
    if function is None:
        return None
    found: list[tuple[int, str, str]] = []  # (rank, type, reason): string evidence beats numbers

    def named(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == name

    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and named(node.value) and (node.attr in STRING_METHODS or node.attr == "str"):
            found.append((0, "string", f"calls .{node.attr}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("strptime", "fromisoformat") and node.args and named(node.args[0]):
            found.append((0, "string", f"is parsed with {node.func.attr}()"))
        elif _matched_by_re(node, named):
            found.append((0, "string", "is matched with a regular expression"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args and named(node.args[0]):
            found.append((1, "string", "is measured with len()"))
        elif isinstance(node, ast.Subscript) and named(node.value) and isinstance(node.slice, ast.Slice):
            found.append((1, "string", "is sliced"))
        elif isinstance(node, ast.Slice) and any(named(bound) for bound in (node.lower, node.upper, node.step) if bound is not None):
            found.append((2, "int", "is a slice bound"))
        elif isinstance(node, ast.Compare) and any(named(side) for side in [node.left, *node.comparators]):
            for side in [node.left, *node.comparators]:
                constants = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                for constant in constants:
                    if isinstance(constant, ast.Constant) and not named(side):
                        value = constant.value
                        if isinstance(value, str):
                            found.append((0, "string", f"is compared with {value!r}"))
                        elif isinstance(value, bool):
                            found.append((2, "boolean", f"is compared with {value!r}"))
                        elif isinstance(value, float):
                            found.append((3, "double", f"is compared with {value!r}"))
                        elif isinstance(value, int):
                            found.append((4, "int", f"is compared with {value!r}"))
        elif isinstance(node, ast.BinOp) and any(named(side) for side in (node.left, node.right)):
            other = node.right if named(node.left) else node.left
            if isinstance(other, ast.Constant) and isinstance(other.value, float):
                found.append((3, "double", f"is used in arithmetic with {other.value!r}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "math" and any(named(a) for a in node.args):
            found.append((3, "double", f"is passed to math.{node.func.attr}"))
    if not found:
        return None
    _rank, data_type, reason = min(found, key=lambda item: item[0])
    return data_type, reason


RE_TEXT_ARGUMENT = {"match": 1, "search": 1, "fullmatch": 1, "findall": 1, "finditer": 1, "split": 1, "sub": 2, "subn": 2}  # in re.<name>(pattern, ...)


def _matched_by_re(node: ast.AST, named: Callable[[ast.AST], bool]) -> bool:
    """`re.search(p, name)`, `re.sub(p, r, name)`: the text a function of `re` reads is a string."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"):
        return False
    position = RE_TEXT_ARGUMENT.get(node.func.attr)
    return position is not None and len(node.args) > position and named(node.args[position])


def literal_domains(arguments: list[UdfArgConfig], found: dict[int, extraction.LiteralDomain], whole_domain: list[str], shown: str = "") -> None:
    """Record, on each argument the job passes only as literals, those values (unless it is to be drawn over its whole type)."""
    names = [a.name for a in arguments]
    unknown = sorted(set(whole_domain) - set(names))
    if unknown:
        raise ToolError(f"whole_domain names {', '.join(unknown)}, which the UDF does not take; its arguments are: {', '.join(names)}.")
    for position, argument in enumerate(arguments):
        domain = found.get(position)
        if domain is None:
            if argument.name in whole_domain:
                raise ToolError(f"whole_domain names {argument.name!r}, but the job does not pass it as a literal at every call: it is drawn over its whole type already.")
            continue
        if argument.name in whole_domain:
            argument.values_from = WIDENED
            continue
        values = _typed_values(domain.values, argument.type)
        if values is not None:
            lines = ", ".join(str(line) for line in domain.lines)
            argument.values = values
            argument.values_from = f"every call of the UDF in the job passes a literal here (line{'s' if len(domain.lines) > 1 else ''} {lines})"
            if domain.sites:  # calls in the project's other files, or a parameter's default, count too
                where = [f"{shown}:{line}" for line in domain.lines] + [site if site != "default" else "the parameter's default where a call leaves it out" for site in domain.sites]
                argument.values_from = f"every call of the UDF under the root passes a literal here ({', '.join(where)})"


def _typed_values(values: list, type_text: str) -> list | None:
    """The literals as values of the argument's type, or None where they are not exactly of it."""
    data_type = parse_type(type_text)
    if isinstance(data_type, T.BooleanType):
        wanted: tuple[type, ...] = (bool,)
    elif isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        wanted = (int,)
    elif isinstance(data_type, (T.DoubleType, T.FloatType)):
        return [float(v) for v in values] if all(type(v) in (int, float) for v in values) else None
    elif isinstance(data_type, T.StringType):
        wanted = (str,)
    else:
        return None
    return list(values) if all(type(v) in wanted for v in values) else None


def parse_type_argument(text: str, what: str):
    try:
        return parse_type(text)
    except UnknownSparkType as exc:
        raise ToolError(f"{what}: {exc}.") from None
