"""Constants and functions a candidate imports from the job's own modules, inlined into its text.

A candidate may write `from patterns import SALARY_RE, CODES as C` where `patterns` is one of the
job's own modules that init_workspace froze (aether.toml's `udf.modules`: the modules the original
draws from, each with its sha256) and each name is bound once, at that module's top level, to a
literal (a number, string, tuple, list, dict or set of them) or to `re.compile` of literals, and
nothing in the module changes it afterwards. The statement is replaced, on the same line, by the
values as the module spells them (`SALARY_RE = re.compile('[$,]'); C = {...}`), so line numbers stay
the candidate's own. Every judge step runs that text, and apply_conversion writes that same text
beside the job: the job runs what was judged, with its own copy of each value, and nothing the
candidate does to a value reaches the job's module or the code that shares it.

A plain function of such a module (`from geo import to_km`) comes as its text, after the
candidate's code, with what it reads from its module: other plain functions, literal constants
and imports of allow-listed libraries; it is then judged as the candidate's own code. The
candidate calls it inside build or evaluate, and binds none of the names it brings.

Anything else from a job module is refused with what to do: the module itself (`import patterns`),
a star import, a decorated function or a computed value, a module the original does not use, or
one whose bytes changed since init. A module whose name a library on the import allow-list also has, or that
the candidate's own folder holds (candidate/<name>.py), is left to the rules that judge imports.
"""

from __future__ import annotations

import ast
import hashlib
import re
import symtable
import tokenize
from collections.abc import Callable
from io import BytesIO
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp import import_policy
from aether_mcp.extraction.factories import is_literal
from aether_mcp.extraction.local_modules import LocalModules
from aether_mcp.workspace import Workspace
from aether_mcp.workspace.candidates import candidate_modules

# Where the module may use a list, dict or set it exports: reads that cannot change it (anything else, a call
# that takes it or a name that aliases it included, is refused, since the value would be known only by running it).
READ_METHODS = {"get", "items", "keys", "values", "count", "index", "copy", "issubset", "issuperset", "isdisjoint", "union", "intersection", "difference", "symmetric_difference"}
READ_BUILTINS = {"len", "sorted", "list", "tuple", "set", "frozenset", "dict", "min", "max", "sum", "any", "all", "enumerate", "zip", "reversed", "str", "repr", "bool", "iter"}
# A module that reaches its names by a string, or swaps itself out, can change any of them.
BY_NAME = {"globals", "vars", "setattr", "delattr", "exec", "eval", "__dict__", "modules", "__import__", "__getattr__", "__setattr__"}
# Names the candidate's contract or the inlined text give a meaning: an import may not bind them.
RESERVED = {"TARGET", "build", "evaluate"}
RE_FLAGS = {"A", "ASCII", "I", "IGNORECASE", "L", "LOCALE", "M", "MULTILINE", "S", "DOTALL", "U", "UNICODE", "X", "VERBOSE", "NOFLAG"}
RE_MODULE = "_aether_job_re"  # the name the inlined `re.compile` reaches `re` by, so that the candidate's own names stay its own


def inline(workspace: Workspace, source: str, shown: str) -> str:
    """`source` with each import of job-module constants replaced by the constants (ToolError when one cannot be).

    `shown`: the candidate's file as messages name it. Unparsable text comes back as it is, for the
    steps that report syntax errors to say so."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    udf = workspace.config.udf
    modules = LocalModules(workspace.root.path)
    job = workspace.root.path / udf.source
    siblings = set(candidate_modules(workspace))
    top = {id(statement) for statement in tree.body}
    replacements: list[tuple[ast.ImportFrom, str]] = []
    functions = _Functions()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for dotted, level in _named_modules(node):
            if level == 0 and (import_policy.allowed_while_running(dotted) or dotted.split(".")[0] in siblings):
                continue
            path = modules.find(job, dotted, level)
            if path is None:
                continue  # not the job's: the import rules judge it
            where = f"{shown} line {node.lineno}"
            rel = path.relative_to(modules.root).as_posix()
            if isinstance(node, ast.Import) or any(alias.name == "*" for alias in node.names):
                raise ToolError(f"{where} imports the job's module {dotted} ({rel}) whole; a candidate may take only its literal constants: write `from {dotted} import NAME`.")
            if id(node) not in top:
                raise ToolError(f"{where} imports from the job's module {dotted} ({rel}) inside a block; import its constants at the candidate's top level.")
            _own_names(tree, node, where)
            replacements.append((node, _assignments(node, rel, path, udf.modules, where, functions, modules)))
    if not replacements:
        return source
    functions.check(tree, shown, [node for node, _ in replacements])
    return _replace(source, replacements, shown) + functions.text()


def _own_names(tree: ast.Module, node: ast.ImportFrom, where: str) -> None:
    """The names an import of constants binds: each once, none the contract reads, none the candidate binds again."""
    names = [alias.asname or alias.name for alias in node.names]
    for name in names:
        if names.count(name) > 1 or name in RESERVED or name == RE_MODULE or name.startswith("__"):
            raise ToolError(f"{where} binds {name} {'twice' if names.count(name) > 1 else 'from the job module'}; import each constant once, under a name of its own.")
        again = next((n for n in ast.walk(tree) if n not in node.names and _rebinds_elsewhere(n, name) and not isinstance(n, (ast.Subscript, ast.AugAssign))), None)
        if again is not None:
            raise ToolError(f"{where} imports {name}, which the candidate binds again at line {getattr(again, 'lineno', '?')}; give one of them another name.")


def _named_modules(node: ast.Import | ast.ImportFrom) -> list[tuple[str, int]]:
    if isinstance(node, ast.Import):
        return [(alias.name, 0) for alias in node.names]
    return [(node.module or "", node.level)]


def _assignments(node: ast.ImportFrom, rel: str, path: Path, frozen: dict[str, str], where: str, functions: _Functions, modules: LocalModules) -> str:
    if rel not in frozen:
        listing = ", ".join(sorted(frozen)) or "none"
        raise ToolError(
            f"{where} imports from {rel}, a module of the job that the original does not use; a candidate may import constants only from the "
            f"modules init_workspace froze for the original ({listing}). Copy the values it needs into the candidate."
        )
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != frozen[rel]:
        raise ToolError(f"{rel} changed since init_workspace (its sha256 is not the one aether.toml froze), so the original judged is not the job's either; run init_workspace again.")
    module = ast.parse(data)
    try:
        text = data.decode(tokenize.detect_encoding(BytesIO(data).readline)[0])  # as Python reads the module
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise ToolError(f"{where}: {rel} cannot be read as Python reads it ({exc}); copy what the candidate needs into it.") from None
    parts: list[str] = []
    for alias in node.names:
        bound = alias.asname or alias.name
        if _function(module, alias.name) is not None:
            if bound != alias.name:
                raise ToolError(f"{where} renames the function {alias.name} of {rel}; import it under its own name.")
            functions.add(module, text, alias.name, rel, lambda top: modules.find(path, top, 0) is not None, where, parts)
            continue
        parts.append(functions.bind(bound, _constant_text(module, alias.name, rel, where, parts), where))
    return "; ".join(dict.fromkeys(parts)) or "pass"


def _constant_text(module: ast.Module, name: str, rel: str, where: str, parts: list[str]) -> str:
    value = _constant(module, name, rel, where)
    if isinstance(value, ast.Call):  # re.compile(...) and its flags, reached through a name of their own
        value = _RenameRe().visit(value)
        if f"import re as {RE_MODULE}" not in parts:
            parts.insert(0, f"import re as {RE_MODULE}")
    try:
        return ast.unparse(value)
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ToolError(f"{where}: {name} in {rel} cannot be written back as text ({exc.__class__.__name__}); copy the value into the candidate.") from None


def _function(module: ast.Module, name: str) -> ast.FunctionDef | None:
    found = [s for s in module.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name]
    return found[0] if len(found) == 1 and isinstance(found[0], ast.FunctionDef) else None


class _Functions:
    """Functions of the job's modules a candidate imports, with what they read from their module, written after the candidate's code.

    What a function reads at module level comes with it: another plain function of the module, a
    literal constant, or an import of an allow-listed library (`import numpy as np`). Its text is
    then the candidate's own, judged by the same rules. The names it brings may not be the
    candidate's, nor another module's: either would change what the function computes."""

    def __init__(self) -> None:
        self.defs: dict[tuple[str, str], tuple[int, str, str]] = {}  # (module, name): (line, text, where from)
        self.owner: dict[str, str] = {}  # every name the functions bring: the module it comes from
        self.brought: dict[str, str] = {}  # names bound for the functions' sake (not functions): the statement binding each
        self.builtins: set[str] = set()  # builtins the functions call, which the candidate must not rebind
        self.imported: set[str] = set()  # functions the candidate imports by name
        self.values: dict[str, str] = {}  # every name an import is replaced by: the statement binding it

    def bind(self, name: str, value: str, where: str) -> str:
        """`name = value`, refused when another inlined import binds `name` to something else."""
        statement = f"{name} = {value}"
        if self.values.setdefault(name, statement) != statement:
            raise ToolError(f"{where} binds {name}, which another import of the job's modules binds to another value; import one of them under another name.")
        return statement

    def add(self, module: ast.Module, text: str, name: str, rel: str, local: Callable[[str], bool], where: str, parts: list[str]) -> None:
        """Bring function `name` of `module` (file `rel`); `local(top)` says whether a library name is a module of the project."""
        _whole_module_checks(module, rel, where)
        star = next((s for s in module.body if isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names)), None)
        if star is not None:
            raise ToolError(f"{where}: {rel} star-imports {star.module} at line {star.lineno}, which may bind any name its functions read; copy {name} into the candidate.")
        self.imported.add(name)
        queue = [name]
        while queue:
            wanted = queue.pop()
            if self.owner.get(wanted, rel) != rel:
                raise ToolError(f"{where}: {name} of {rel} reads {wanted}, which a function of {self.owner[wanted]} the candidate also imports reads as its own; copy one of them into the candidate.")
            if (rel, wanted) in self.defs or wanted in self.brought:
                continue
            if wanted.startswith("__") or wanted in RESERVED or wanted == RE_MODULE:
                raise ToolError(f"{where}: {name} of {rel} reads {wanted}, which is not the same name in the candidate as in its module; copy what it does into the candidate.")
            if wanted in BUILTIN_NAMES and not _bound_at_top(module, wanted):
                self.builtins.add(wanted)
                continue
            self.owner[wanted] = rel
            function = _function(module, wanted)
            if function is not None:
                self._check_function(module, function, rel, where)
                segment = ast.get_source_segment(text, function) or ast.unparse(function)
                self.defs[(rel, wanted)] = (function.lineno, segment, f"{rel} line {function.lineno}")
                queue += sorted(_free_names(segment, rel))
                continue
            imported = _library_import(module, wanted)
            twice = [n for n in ast.walk(module) if isinstance(n, ast.alias) and _rebinds_elsewhere(n, wanted)]
            if imported is None and twice:
                raise ToolError(f"{where}: {name} of {rel} reads {wanted}, which its module imports from a library off the allow-list or binds more than once; copy what it does into the candidate.")
            if imported is not None:
                if local(imported.split()[1].split(".")[0]):
                    raise ToolError(f"{where}: {name} of {rel} reads {wanted}, which its module imports from a module of the project named like a library; copy what it does into the candidate.")
                self.brought[wanted] = imported
                parts.insert(0, imported)
                continue
            self.brought[wanted] = statement = self.bind(wanted, _constant_text(module, wanted, rel, f"{where}: {name} needs {wanted}", parts), where)
            parts.append(statement)
        changed = next((n for n in ast.walk(module) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) and _base(n) in self.owner), None)
        if changed is not None:
            raise ToolError(f"{where}: {rel} sets an attribute of {_base(changed)} at line {changed.lineno}, so what it is is known only by running the module; copy what it does into the candidate.")

    def _check_function(self, module: ast.Module, function: ast.FunctionDef, rel: str, where: str) -> None:
        name = function.name
        if function.decorator_list:
            raise ToolError(f"{where}: {name} in {rel} (line {function.lineno}) is decorated, so what it is depends on running the decorator; copy what it does into the candidate.")
        again = next((n for n in ast.walk(module) if n is not function and _rebinds_elsewhere(n, name)), None)
        if again is not None:
            raise ToolError(f"{where}: {rel} binds {name} again at line {again.lineno}, so which function it is is known only by running the module; copy it into the candidate.")
        scoped = next((n for n in ast.walk(function) if isinstance(n, (ast.Global, ast.Nonlocal))), None)
        if scoped is not None:
            raise ToolError(f"{where}: {name} in {rel} declares {', '.join(scoped.names)} global at line {scoped.lineno}; a function that changes its module's names cannot be taken apart from it. Copy what it does into the candidate.")

    def check(self, tree: ast.Module, shown: str, inlined: list[ast.ImportFrom]) -> None:
        """The candidate's side: it calls the functions only once its own code has run, and binds none of the names they read."""
        if not self.defs:
            return
        early = next((n for n in _module_level_loads(tree) if n.id in self.imported), None)
        if early is not None:
            raise ToolError(
                f"{shown} line {early.lineno} uses {early.id} while the candidate's module is still running; the job's functions are defined after "
                "the candidate's code, so call them inside build or evaluate."
            )
        own = {statement for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) for statement in _import_forms(node)}
        # the candidate's own import of the same name binds the same value the functions read (bind() refuses another value)
        replaced = {id(alias) for node in inlined for alias in node.names if alias.asname in (None, alias.name)}
        names = sorted({*self.brought, *self.builtins, *(n for (_, n) in self.defs if n not in self.imported)})
        for node in ast.walk(tree):
            if id(node) in replaced:
                continue
            for name in names:
                if _rebinds_elsewhere(node, name) and not isinstance(node, (ast.Subscript, ast.AugAssign)):
                    if isinstance(node, ast.alias) and self.brought.get(name) in own:
                        continue  # the same library, imported the same way
                    raise ToolError(f"{shown} line {getattr(node, 'lineno', '?')} binds {name}, which the job's functions it imports read; give it another name.")

    def text(self) -> str:
        if not self.defs:
            return ""
        ordered = sorted(self.defs.items(), key=lambda item: (item[0][0], item[1][0]))  # each module's functions in its own order
        blocks = [f"# {name}: from {where}, as judged\n{text}\n" for (_, name), (_, text, where) in ordered]
        return "\n\n" + "\n\n".join(blocks)


BUILTIN_NAMES = set(dir(__import__("builtins")))


def _bound_at_top(module: ast.Module, name: str) -> bool:
    return any(_rebinds_elsewhere(node, name) for node in ast.walk(module))


def _base(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _free_names(segment: str, rel: str) -> set[str]:
    """The module-level names a top-level function's text reads: in its defaults and annotations, and in any of its scopes."""
    top = symtable.symtable(segment, rel, "exec")
    found = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    pending = list(top.get_children())
    while pending:
        table = pending.pop()
        found |= {s.get_name() for s in table.get_symbols() if s.is_global() and (s.is_referenced() or s.is_assigned())}
        pending += table.get_children()
    return found


def _library_import(module: ast.Module, name: str) -> str | None:
    """The module's top-level import binding `name` to an allow-listed library, as a statement; None when none does
    (or when something else binds the name too)."""
    if sum(1 for node in ast.walk(module) if _rebinds_elsewhere(node, name)) != 1:
        return None
    for statement in module.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if (alias.asname or alias.name.split(".")[0]) == name and import_policy.allowed(alias.name):
                    return f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
        elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            for alias in statement.names:
                if (alias.asname or alias.name) == name and import_policy.allowed(f"{statement.module}.{alias.name}"):
                    return f"from {statement.module} import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
    return None


def _import_forms(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [f"import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names]
    return [f"from {node.module} import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in node.names if not node.level]


def _module_level_loads(tree: ast.Module) -> list[ast.Name]:
    """Names read while the module runs: outside function and lambda bodies (decorators and defaults included)."""
    found: list[ast.Name] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            continue
        if isinstance(node, ast.Lambda):
            pending += [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.append(node)
        pending += list(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _whole_module_checks(module: ast.Module, rel: str, where: str) -> None:
    by_name = next((n for n in ast.walk(module) if (isinstance(n, ast.Name) and n.id in BY_NAME) or (isinstance(n, ast.Attribute) and n.attr in BY_NAME)), None)
    if by_name is not None:
        raise ToolError(f"{where}: {rel} reaches names by a string or through its namespace at line {by_name.lineno}, so its values are known only by running it; copy the value the job uses into the candidate.")


def _constant(module: ast.Module, name: str, rel: str, where: str) -> ast.expr:
    """The literal (or re.compile call) `name` is bound to in `module`, or a ToolError that says why it is not a constant."""
    bound = [statement for statement in module.body if _binds(statement, name)]
    targets = {id(n) for statement in bound for target in _targets(statement) for n in ast.walk(target)}
    nested = [n for n in ast.walk(module) if _rebinds_elsewhere(n, name) and id(n) not in targets]
    if not bound:
        raise ToolError(f"{where}: {rel} does not bind {name} at its top level by an assignment; import it from the module that defines it, or copy it into the candidate.")
    if len(bound) > 1 or nested:
        line = (bound[1] if len(bound) > 1 else nested[0]).lineno
        raise ToolError(f"{where}: {rel} binds or changes {name} again at line {line}, so its value is known only by running the module; copy the value the job uses into the candidate.")
    statement = bound[0]
    value = statement.value
    _whole_module_checks(module, rel, where)
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (isinstance(value, ast.Tuple) and any(isinstance(n, (ast.List, ast.Dict, ast.Set)) for n in ast.walk(value))):
        changed = _changing_use(module, name, statement)
        if changed is not None:
            raise ToolError(f"{where}: {rel} uses {name} at line {changed} in a way that could change it (only reads such as {name}[k], .get(), `in` and loops are followed); copy the value the job uses into the candidate.")
    if value is None or not (is_literal(value) or _compiled_pattern(value, module)):
        raise ToolError(
            f"{where}: {name} in {rel} (line {statement.lineno}) is not a literal (a number, string, tuple, list, dict or set of them, or re.compile of literals); "
            "a candidate may import only such constants from the job's modules. Write what it computes into the candidate, where it is judged with the rest."
        )
    later = [s for s in module.body if s.lineno > statement.lineno and isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names)]
    if later:
        raise ToolError(f"{where}: {rel} star-imports another module at line {later[0].lineno}, after it binds {name}, which may bind it again; copy the value into the candidate.")
    return value


def _changing_use(module: ast.Module, name: str, statement: ast.stmt) -> int | None:
    """The line of the first use of mutable `name` outside `statement` that is not a plain read, or None."""
    parents = {child: parent for parent in ast.walk(module) for child in ast.iter_child_nodes(parent)}
    inside = {id(n) for n in ast.walk(statement)}
    for node in ast.walk(module):
        if not (isinstance(node, ast.Name) and node.id == name) or id(node) in inside:
            continue
        parent = parents.get(node)
        reads = (
            (isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load))
            or (isinstance(parent, ast.Compare) and node in parent.comparators)
            or (isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node)
            or (isinstance(parent, ast.Attribute) and parent.attr in READ_METHODS and isinstance(parents.get(parent), ast.Call) and parents[parent].func is parent)
            or (isinstance(parent, ast.Call) and node in parent.args and isinstance(parent.func, ast.Name) and parent.func.id in READ_BUILTINS)
        )
        if not reads:
            return node.lineno
    return None


def _targets(statement: ast.stmt) -> list[ast.expr]:
    return list(statement.targets) if isinstance(statement, ast.Assign) else [statement.target]  # type: ignore[attr-defined]


def _binds(statement: ast.stmt, name: str) -> bool:
    if isinstance(statement, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in statement.targets)
    if isinstance(statement, ast.AnnAssign):
        return isinstance(statement.target, ast.Name) and statement.target.id == name
    return False


def _rebinds_elsewhere(node: ast.AST, name: str) -> bool:
    """Anything in the module other than a plain top-level assignment that binds, rebinds or changes `name` in place."""
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):  # except E as NAME, case NAME
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    if isinstance(node, ast.Subscript):  # CODES[k] = v, del CODES[k]
        return isinstance(node.ctx, (ast.Store, ast.Del)) and _base(node.value) == name
    if isinstance(node, ast.AugAssign):
        return _base(node.target) == name
    return False


def _compiled_pattern(node: ast.AST, module: ast.Module) -> bool:
    """`re.compile(<literal>[, <re flags>])`, where the module's `re` is the standard library's."""
    if not (isinstance(node, ast.Call) and not node.keywords and 1 <= len(node.args) <= 2):
        return False
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "compile" and isinstance(func.value, ast.Name) and func.value.id == "re"):
        return False
    imports_re = any(isinstance(s, ast.Import) and any(a.name == "re" and a.asname is None for a in s.names) for s in module.body)
    rebinds_re = any(_rebinds_elsewhere(n, "re") for n in ast.walk(module) if not (isinstance(n, ast.alias) and n.name == "re" and n.asname is None))
    return imports_re and not rebinds_re and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, (str, bytes)) and (len(node.args) == 1 or _flags(node.args[1]))


def _flags(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _flags(node.left) and _flags(node.right)
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re" and node.attr in RE_FLAGS


class _RenameRe(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(RE_MODULE, node.ctx) if node.id == "re" else node


def _replace(source: str, replacements: list[tuple[ast.ImportFrom, str]], shown: str) -> str:
    """Each import's text replaced by its assignments on its first line, its other lines left empty."""
    lines = _lines(source)
    for node, text in sorted(replacements, key=lambda r: (r[0].lineno, r[0].col_offset), reverse=True):
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        start = _offset(lines[first], node.col_offset)
        end = _offset(lines[last], node.end_col_offset or 0)
        tail = lines[last][end:]
        if first == last:
            lines[first] = lines[first][:start] + text + tail
            continue
        if tail.strip():
            raise ToolError(f"{shown} line {node.end_lineno}: put the import from the job's module on lines of its own, then run again.")
        lines[first] = lines[first][:start] + text + "\n"
        for index in range(first + 1, last + 1):
            lines[index] = "\n"
    expanded = "".join(lines)
    try:
        ast.parse(expanded)
    except SyntaxError as exc:
        raise ToolError(f"{shown}: its imports of the job's constants could not be inlined ({exc.msg}); put each on a line of its own.") from None
    return expanded


def _lines(text: str) -> list[str]:
    """Lines as Python's parser counts them (only \\r\\n, \\r and \\n end one), each with its ending."""
    parts = re.split(r"(\r\n|\r|\n)", text)
    return [parts[i] + (parts[i + 1] if i + 1 < len(parts) else "") for i in range(0, len(parts), 2)]


def _offset(line: str, byte_offset: int) -> int:
    """ast's column offsets count UTF-8 bytes."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))
