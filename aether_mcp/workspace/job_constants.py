"""Constants a candidate imports from the job's own modules, inlined where the import stands.

A candidate may write `from patterns import SALARY_RE, CODES as C` where `patterns` is one of the
job's own modules that init_workspace froze (aether.toml's `udf.modules`: the modules the original
draws from, each with its sha256) and each name is bound once, at that module's top level, to a
literal (a number, string, tuple, list, dict or set of them) or to `re.compile` of literals, and
nothing in the module changes it afterwards. The statement is replaced, on the same line, by the
values as the module spells them (`SALARY_RE = re.compile('[$,]'); C = {...}`), so line numbers stay
the candidate's own. Every judge step runs that text, and apply_conversion writes that same text
beside the job: the job runs what was judged, with its own copy of each value, and nothing the
candidate does to a value reaches the job's module or the code that shares it.

Anything else from a job module is refused with what to do: the module itself (`import patterns`),
a star import, a function or a computed value, a module the original does not use, or one whose
bytes changed since init. A module whose name a library on the import allow-list also has, or that
the candidate's own folder holds (candidate/<name>.py), is left to the rules that judge imports.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp import import_policy
from aether_mcp.extraction.local_modules import LocalModules
from aether_mcp.workspace import CANDIDATE_DIR, Workspace

# Methods that change a list, dict or set in place: the job's module must not call them on a name it exports.
MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear", "remove", "discard", "add", "sort", "reverse", "__setitem__", "__delitem__", "__ior__"}
RE_FLAGS = {"A", "ASCII", "I", "IGNORECASE", "L", "LOCALE", "M", "MULTILINE", "S", "DOTALL", "U", "UNICODE", "X", "VERBOSE", "NOFLAG"}
RE_MODULE = "_aether_job_re"  # the name the inlined `re.compile` reaches `re` by, so that the candidate's own names stay its own


def inline(workspace: Workspace, source: str, shown: str) -> str:
    """`source` with each import of job-module constants replaced by the constants (ToolError when one cannot be).

    `shown`: the candidate's file as messages name it. Unparsable text comes back as it is, for the
    steps that report syntax errors to say so."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    udf = workspace.config.udf
    modules = LocalModules(workspace.root.path)
    job = workspace.root.path / udf.source
    siblings = {p.stem for p in (workspace.path / CANDIDATE_DIR).iterdir()} if (workspace.path / CANDIDATE_DIR).is_dir() else set()
    top = {id(statement) for statement in tree.body}
    replacements: list[tuple[ast.ImportFrom, str]] = []
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
            replacements.append((node, _assignments(node, rel, path, udf.modules, where, dotted)))
    if not replacements:
        return source
    return _replace(source, replacements, shown)


def _named_modules(node: ast.Import | ast.ImportFrom) -> list[tuple[str, int]]:
    if isinstance(node, ast.Import):
        return [(alias.name, 0) for alias in node.names]
    return [(node.module or "", node.level)]


def _assignments(node: ast.ImportFrom, rel: str, path: Path, frozen: dict[str, str], where: str, dotted: str) -> str:
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
    parts = []
    for alias in node.names:
        value = _constant(module, alias.name, rel, where)
        if isinstance(value, ast.Call):  # re.compile(...) and its flags, reached through a name of their own
            value = _RenameRe().visit(value)
            parts.insert(0, f"import re as {RE_MODULE}")
        parts.append(f"{alias.asname or alias.name} = {ast.unparse(value)}")
    return "; ".join(dict.fromkeys(parts))


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
    if value is None or not (_literal(value) or _compiled_pattern(value, module)):
        raise ToolError(
            f"{where}: {name} in {rel} (line {statement.lineno}) is not a literal (a number, string, tuple, list, dict or set of them, or re.compile of literals); "
            "a candidate may import only such constants from the job's modules. Write what it computes into the candidate, where it is judged with the rest."
        )
    later = [s for s in module.body if s.lineno > statement.lineno and isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names)]
    if later:
        raise ToolError(f"{where}: {rel} star-imports another module at line {later[0].lineno}, after it binds {name}, which may bind it again; copy the value into the candidate.")
    return value


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
    if isinstance(node, ast.Subscript):  # CODES[k] = v, del CODES[k]
        return isinstance(node.ctx, (ast.Store, ast.Del)) and _names(node.value, name)
    if isinstance(node, ast.AugAssign):
        return _names(node.target, name)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):  # CODES.update(...)
        return node.func.attr in MUTATORS and _names(node.func.value, name)
    return False


def _names(node: ast.AST, name: str) -> bool:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return isinstance(node, ast.Name) and node.id == name


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


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
    lines = source.splitlines(keepends=True)
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


def _offset(line: str, byte_offset: int) -> int:
    """ast's column offsets count UTF-8 bytes."""
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))
