"""Static rules that catch cheating candidates: code, not judgement, each rule with its own tests.

Every rule reads the candidate's AST (and any workspace module it imports) and reports where a
candidate reaches for the original, works row by row, copies device data back to the host,
falls back to slower code, hard-codes test data, reads what it should not, tampers with the
environment, escapes into threads, processes or the JVM, or memoizes across calls.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aether_mcp import import_policy
from aether_mcp.judge import closed_language
from aether_mcp.judge.closed_language import folded_string

Severity = str  # "block" or "warn"

WHY = {
    "reaches_original": "a candidate must compute the result itself; loading the original (or any code by name at run time) hides it",
    "row_at_a_time": "per-row Python work in a vectorized or kernel target (or a Python UDF in a sql target) is the slowness the conversion removes",
    "host_round_trip": "copying device data back to the host on the GPU path throws away the GPU",
    "no_device_work": "on the GPU backend, a candidate that launches no kernel computed on the host: no GPU speed can come from it",
    "fallback": "a broad except around the fast path silently falls back to other code when it fails",
    "hard_coded": "a literal taken from the test cases, not from the original, only makes the tests pass",
    "reads_forbidden": "a candidate must not read tests, server state or the original, or probe its environment to detect a test run",
    "tampering": "changing imported modules, Spark confs, files or caching the inputs changes what is measured, not the candidate",
    "escape": "threads, processes, sockets, ctypes and JVM calls run work the harness cannot see or check",
    "memoization": "state kept across calls makes later results depend on earlier inputs",
    "batch_dependent": "results that depend on how Spark splits rows into batches change from run to run",
    "evades_watch": "turning the step counter off, relabelling code or making functions at run time hides what the candidate does from the judge",
    "unexpected_import": "a candidate may import only the libraries whose behaviour the judge knows (NumPy, pandas, PyArrow, the standard library's math and text modules, Spark SQL's API, aether_mcp.backend, CuPy, cuDF, numba)",
    "watch_dependent": "a candidate must return the same rows whether or not it is watched; outputs of watched runs are compared with the original like any other",
    "hides_failures": "where the original raises, its job fails; a value there (a null above all) turns that crash into data written silently",
    "not_deterministic": "a candidate may compute only from its arguments: the time, a random number, the partition or file a row came from differ between the judged run and the job",
    "fails_in_job": "the converted job imports the candidate before any SparkSession exists; a candidate that cannot load then crashes the job, however equal it was when judged",
    "outside_language": "a candidate is written in a closed language: allow-listed modules reached by import, used only as module.name, and public attributes; a private attribute, a module passed around as a value or an attribute that leads to a module off the allow-list reaches what the import rules keep out (the clock, the environment, threads)",
}
FIX = {
    "reaches_original": "re-implement the logic in the candidate; copy constants and helpers you need from original/udf.py",
    "row_at_a_time": "use whole-column operations: pandas .str, np.where/np.select, Series.map with a dict, Spark SQL functions",
    "host_round_trip": "keep the data on the device; return a device Series and let the harness convert it once",
    "no_device_work": "use xp/xdf from aether_mcp.backend (CuPy/cuDF on the GPU backend) for the work, not NumPy/pandas or Python",
    "fallback": "catch only the specific exception you expect, or let it raise",
    "hard_coded": "derive values from the original's constants and logic, not from test expectations",
    "reads_forbidden": "remove the file, environment or frame access",
    "tampering": "remove the assignment, write, conf change or caching",
    "escape": "do the work in the entry point itself, with pandas/NumPy or Spark SQL",
    "memoization": "compute from the inputs every call; keep module-level constants read-only",
    "batch_dependent": "compute each row from its own arguments only, never from the batch it arrives in",
    "evades_watch": "remove the trace/profile calls, code-object edits and function construction",
    "unexpected_import": "use NumPy, pandas, PyArrow, math, re, decimal, datetime, unicodedata, pyspark.sql.functions/types, aether_mcp.backend, CuPy, cuDF or numba",
    "watch_dependent": "compute the same result on every run; do not inspect sys.gettrace() or anything else that tells a watched run apart",
    "not_deterministic": "compute the result from the arguments alone (in sql, with the functions of pyspark.sql.functions that depend on nothing else); a generator needs a fixed seed",
    "fails_in_job": "keep module level to imports and plain constants: build Columns inside build(*cols), arrays and frames inside evaluate(*series)",
    "outside_language": "import what you need from the allow-list by name (import math, from numpy import where), use modules only as module.name and public attributes only",
    "hides_failures": "fail on those rows too (raise in vectorized code, F.raise_error or F.assert_true in sql), or record_deviation(..., returns_where_original_raises=true) if the pipeline wants the value",
}
DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__"}
DYNAMIC_LOADERS = {"import_module", "spec_from_file_location", "module_from_spec", "run_path", "run_module", "exec_module", "__import__", "load_module"}
FORBIDDEN_MODULES = {"importlib", "runpy", "inspect", "gc", "traceback", "pickle", "marshal"}
ESCAPE_MODULES = {"threading", "multiprocessing", "concurrent", "subprocess", "socket", "ctypes", "asyncio", "signal", "requests", "urllib", "http", "_thread"}
ESCAPE_OS_CALLS = {"fork", "system", "popen", "spawnl", "spawnv", "execv", "execl", "execve", "forkpty", "kill"}
ROW_METHODS = {"apply", "applymap", "iterrows", "itertuples", "agg", "aggregate", "transform", "pipe"}
HOST_METHODS = {"to_pandas", "values_host", "asnumpy", "copy_to_host", "to_arrow"}
# Modules whose arrays and Series live on the GPU (aether_mcp.backend's xp/xdf are CuPy/cuDF there).
DEVICE_MODULES = {"cupy", "cupyx", "cudf", "dask_cudf", "pylibcudf", "rmm"}
# In a per-row loop of a device-capable module, each of these copies device data to the host.
ROW_HOST_METHODS = {"item", "tolist", "to_numpy", "copy_to_host", "values_host"}
ROW_HOST_CASTS = {"float", "int", "bool", "complex"}
ELEMENT_ACCESSORS = {"iloc", "iat", "at", "loc", "values", "array"}
ITERATING_CALLS = {"zip", "enumerate", "reversed", "iter", "list", "tuple", "sorted"}
NOT_ROWS = {"columns", "dtypes", "shape", "ndim", "names", "size"}
CACHE_METHODS = {"cache", "persist", "checkpoint", "localCheckpoint", "broadcast"}
MUTATING_METHODS = {"append", "extend", "update", "setdefault", "add", "insert", "pop", "popitem", "clear", "remove", "discard"}
WRITE_CALLS = {"write_text", "write_bytes", "unlink", "remove", "rename", "replace", "makedirs", "mkdir", "rmtree", "copyfile", "copytree", "move", "symlink"}
FILE_MODULES = {"os", "shutil", "pathlib", "Path"}
READ_CALLS = {"open", "read_text", "read_bytes", "listdir", "scandir", "walk", "glob", "iglob", "rglob", "iterdir", "loadtxt", "read_csv", "read_parquet"}
FORBIDDEN_TEXT = ("tests/", "tests\\", ".aether", "original/", "original\\", "cases.py", "udf.py", "PYTEST", "AETHER_")
# Strings built from pieces ("orig" + "inal", "".join([...]), f"{a}{b}") have no reason to spell these at all.
FORBIDDEN_BUILT_TEXT = FORBIDDEN_TEXT + ("original", "aether", "tests", "cases", "udf", "builtins")
# Names that reach code, the interpreter's state or the file system when looked up dynamically.
DANGEROUS_NAMES = {"exec", "eval", "compile", "__import__", "open", "modules", "environ", "path", "settrace", "setprofile", "_getframe",
                   "system", "popen", "getattr", "globals", "locals", "vars", "__dict__", "__code__", "__globals__", "__builtins__",
                   "import_module", "spec_from_file_location", "module_from_spec", "exec_module", "load_module", "get_objects", "FileIO", "read_text", "read_bytes"}
# Builtins and standard-library helpers that call a Python function once per element, in C.
C_ITERATION = {"map", "filter", "reduce", "starmap", "accumulate", "filterfalse", "takewhile", "dropwhile", "groupby"}
KEY_FUNCTIONS = {"sorted", "min", "max"}
WATCH_CALLS = {"settrace", "setprofile", "gettrace", "getprofile"}
# SQL text that calls into the JVM or reads files (SQL function names are case-insensitive).
JVM_SQL = re.compile(r"\b(try_reflect|reflect|java_method)\s*\(|\binput_file_name\b|\bread_files\b|\bjava\.(lang|io|nio|net)\.", re.IGNORECASE)
TRIVIAL_LITERALS = {0, 1, -1, 2, 10, 100, 0.5, "", " ", None}


@dataclass
class RuleFinding:
    rule: str
    severity: Severity
    file: str
    line: int
    evidence: str
    why: str
    fix: str


def check_candidate(
    source: str,
    file: str,
    kind: str,
    case_literals: set[Any],
    original_literals: set[Any],
    entry_point: str,
) -> list[RuleFinding]:
    """Every finding of every rule in one candidate (or workspace module) source."""
    scanner = _Scanner(source, file, kind, case_literals - original_literals - TRIVIAL_LITERALS, entry_point, original_literals)
    return scanner.run()


def literals_in(value: Any) -> set[Any]:
    """Numbers and strings inside a (nested) value, as the hard-coding rule compares them."""
    found: set[Any] = set()
    if isinstance(value, bool) or value is None:
        return found
    if isinstance(value, (int, float, str)):
        found.add(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found |= literals_in(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            found |= literals_in(key) | literals_in(item)
    return found


def imported_workspace_modules(source: str, candidate_dir: Path, workspace: Path) -> list[Path]:
    """Workspace files a candidate imports (siblings in candidate/, or anything at the workspace root)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            relative = Path(*name.split("."))
            for base in (candidate_dir, workspace):
                for path in (base / f"{relative}.py", base / relative / "__init__.py"):
                    if path.is_file() and path not in found:
                        found.append(path)
    return found


class _Scanner:
    def __init__(self, source: str, file: str, kind: str, forbidden_literals: set[Any], entry_point: str, original_literals: set[Any] = frozenset()) -> None:
        self.tree = ast.parse(source)
        self.lines = source.splitlines()
        self.file = file
        self.kind = kind
        self.forbidden = forbidden_literals
        self.original_literals = original_literals
        self.entry_point = entry_point
        self.findings: list[RuleFinding] = []
        self.modules = self._imported_names()
        self.device_functions = self._device_functions()
        self.module_mutables = self._module_mutables()
        self.functions = {n.name for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def run(self) -> list[RuleFinding]:
        self._imports()
        self._device_row_copies()  # first: on a line both flag, the per-row evidence is the one kept
        self._calls_and_attributes()
        self._built_strings()
        self._loops()
        self._try_blocks()
        self._assignments()
        self._literals()
        self._memoization()
        closed_language.Checker(self.tree, self.original_literals, lambda rule, node, detail: self.add(rule, node, detail=detail)).run()
        unique: dict[tuple[str, int], RuleFinding] = {}
        for finding in self.findings:
            unique.setdefault((finding.rule, finding.line), finding)
        return sorted(unique.values(), key=lambda f: (f.line, f.rule))

    def add(self, rule: str, node: ast.AST, severity: Severity = "block", detail: str = "") -> None:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        evidence = f"{text}  [{detail}]" if detail else text
        self.findings.append(RuleFinding(rule, severity, self.file, line, evidence[:300], WHY[rule], FIX[rule]))

    # --- rules ---------------------------------------------------------------------------

    def _imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    top = name.split(".")[0]
                    if top in ("original", "udf", "tests", "cases") or "original" in name or "aether_original" in name:
                        self.add("reaches_original", node, detail=f"imports {name}")
                    elif top in FORBIDDEN_MODULES:
                        self.add("reaches_original" if top in ("importlib", "runpy", "pickle", "marshal") else "reads_forbidden", node, detail=f"imports {name}")
                    elif top in ESCAPE_MODULES:
                        self.add("escape", node, detail=f"imports {name}")
                    elif top == "aether_mcp" and not name.startswith("aether_mcp.backend"):
                        self.add("reaches_original", node, detail=f"imports the harness ({name})")
                    elif top == "builtins":
                        self.add("reaches_original", node, detail="imports builtins, which gives exec, eval and open by name")
                    elif not self._import_allowed(node, name):
                        self.add("unexpected_import", node, detail=f"imports {name}, which is not on the candidate allow-list")

    def _import_allowed(self, node: ast.Import | ast.ImportFrom, name: str) -> bool:
        if isinstance(node, ast.Import):
            return import_policy.allowed(name)
        return import_policy.allowed(name) or all(import_policy.allowed(f"{name}.{alias.name}") for alias in node.names)

    def _c_iteration(self, node: ast.Call, name: str | None, data: set[str]) -> str | None:
        """Why a call runs a Python function per element in C (map, sorted(key=), reduce...), or None."""
        if self.kind == "sql" or self._inside_device(node):
            return None
        over_data = any(isinstance(n, ast.Name) and n.id in data for argument in node.args for n in ast.walk(argument))
        module = ast.unparse(node.func.value) if isinstance(node.func, ast.Attribute) else ""
        if name in C_ITERATION and (isinstance(node.func, ast.Name) or module in ("functools", "itertools")) and over_data:
            return f"{name}() calls a Python function once per element"
        if module == "itertools" and over_data:
            return f"itertools.{name}() walks the data one element at a time in Python"
        if name in KEY_FUNCTIONS and isinstance(node.func, ast.Name) and any(k.arg == "key" for k in node.keywords) and over_data:
            return f"{name}(key=...) calls the key function once per element"
        if name in ("frompyfunc", "apply_along_axis", "piecewise") and isinstance(node.func, ast.Attribute):
            return f"{module}.{name} calls a Python function per element"
        if name == "combine" and isinstance(node.func, ast.Attribute) and len(node.args) >= 2:
            return ".combine(other, func) calls func once per row"
        if name == "replace" and isinstance(node.func, ast.Attribute) and ".str" in f".{module}":
            repl = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "repl"), None)
            if isinstance(repl, ast.Lambda) or (isinstance(repl, ast.Name) and repl.id in self.functions):
                return ".str.replace with a callable repl calls it once per match"
        return None

    def _dynamic_lookup(self, node: ast.Call, name: str | None) -> tuple[str, str] | None:
        """(rule, detail) for getattr/vars spellings that reach code or state by a name built at run time."""
        if not isinstance(node.func, ast.Name) or name not in ("getattr", "vars", "hasattr", "setattr", "delattr"):
            return None
        if name == "vars":
            return ("reads_forbidden", "vars() reads an object's namespace") if node.args else ("reads_forbidden", "vars() reads the caller's locals")
        if len(node.args) < 2:
            return None
        owner = node.args[0]
        attribute = folded_string(node.args[1])
        owner_is_module = isinstance(owner, ast.Name) and (owner.id in self.modules or owner.id in ("__builtins__", "builtins", "sys", "os"))
        if attribute is None:
            if owner_is_module:
                return "reads_forbidden", f"{name}() on {ast.unparse(owner)} with a name computed at run time"
            return None
        if attribute in DANGEROUS_NAMES or (attribute.startswith("__") and attribute not in ("__name__", "__doc__")):
            return "reaches_original", f"{name}({ast.unparse(owner)}, {attribute!r}) looks up {attribute} by name"
        return None

    def _calls_and_attributes(self) -> None:
        data = self._data_names()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                text = ast.unparse(node.func)
                in_device = self._inside_device(node)
                per_element = self._c_iteration(node, name, data)
                lookup = self._dynamic_lookup(node, name)
                if per_element:
                    self.add("row_at_a_time", node, detail=per_element)
                elif lookup:
                    self.add(lookup[0], node, detail=lookup[1])
                elif name in WATCH_CALLS and isinstance(node.func, ast.Attribute) and text.split(".")[0] in ("sys", "threading"):
                    self.add("evades_watch", node, detail=f"{text}() touches the interpreter's trace or profile hooks")
                elif name in ("FunctionType", "CodeType", "LambdaType") or (name == "replace" and any(k.arg and k.arg.startswith("co_") for k in node.keywords)):
                    self.add("evades_watch", node, detail=f"{text}() makes code or functions at run time")
                elif (isinstance(node.func, ast.Name) and name in DYNAMIC_BUILTINS) or (isinstance(node.func, ast.Attribute) and name in DYNAMIC_LOADERS):
                    self.add("reaches_original", node, detail=f"dynamic code: {name}()")
                elif name in ("udf", "pandas_udf") and not in_device:
                    self.add("row_at_a_time", node, detail="creates a Python UDF")
                elif name in ROW_METHODS and self.kind != "sql" and isinstance(node.func, ast.Attribute):
                    if name not in ("agg", "aggregate", "transform", "pipe") or any(isinstance(a, (ast.Lambda, ast.Name)) for a in node.args):
                        self.add("row_at_a_time", node, detail=f".{name}() runs Python per row")
                elif name == "map" and isinstance(node.func, ast.Attribute) and self.kind != "sql" and node.args and not self._is_mapping(node.args[0]):
                    self.add("row_at_a_time", node, detail=".map() with a Python callable")
                elif name in ("vectorize", "frompyfunc") and "np" in text or name in ("vectorize", "frompyfunc") and "numpy" in text:
                    self.add("row_at_a_time", node, detail=f"np.{name} is a Python loop")
                elif name in HOST_METHODS and self.kind != "sql" and (name != "copy_to_host" or self._in_loop(node)):
                    self.add("host_round_trip", node, detail=f".{name}()")
                elif name == "get" and isinstance(node.func, ast.Attribute) and not node.args and self._uses_device_library():
                    self.add("host_round_trip", node, detail=".get() copies a device array to the host")
                elif name in CACHE_METHODS and isinstance(node.func, ast.Attribute):
                    self.add("tampering", node, detail=f".{name}() caches or broadcasts data")
                elif name == "set" and ".conf" in text:
                    self.add("tampering", node, detail="changes a Spark conf")
                elif name in ("setattr", "delattr"):
                    self.add("tampering", node, detail=f"{name}() on an object")
                elif name in WRITE_CALLS and isinstance(node.func, ast.Attribute) and (text.split(".")[0] in FILE_MODULES or name in ("write_text", "write_bytes", "rmtree")):
                    self.add("tampering", node, detail=f"writes files ({text})")
                elif name == "open" and _opens_for_writing(node):
                    self.add("tampering", node, detail="opens a file for writing")
                elif name in READ_CALLS and not (isinstance(node.func, ast.Attribute) and text.split(".")[0] in ("F", "functions")):
                    self.add("reads_forbidden", node, detail=f"reads files ({text})")
                elif name in ("getenv", "_getframe", "currentframe", "stack", "get_objects", "get_referrers") or name in ESCAPE_OS_CALLS and text.startswith("os."):
                    rule = "escape" if name in ESCAPE_OS_CALLS else "reads_forbidden"
                    self.add(rule, node, detail=f"{text}()")
                elif name in ("reflect", "try_reflect", "java_method", "input_file_name", "input_file_block_start", "input_file_block_length"):
                    self.add("escape", node, detail=f"calls into the JVM ({text})")
            elif isinstance(node, ast.Attribute):
                full = ast.unparse(node)
                if full in ("os.environ", "sys.modules", "sys.argv", "sys.path", "os.environ.get") or full.startswith(("sys.modules", "os.environ")):
                    self.add("reaches_original" if full.startswith("sys.path") else "reads_forbidden", node, detail=full)
                elif node.attr == "values_host":
                    self.add("host_round_trip", node, detail=".values_host")
                elif node.attr in ("__globals__", "__code__", "__closure__", "cell_contents", "f_back"):
                    self.add("reads_forbidden", node, detail=f"introspection via .{node.attr}")
            elif isinstance(node, ast.Name) and node.id == "__builtins__":
                self.add("reaches_original", node, detail="__builtins__ gives exec, eval and open by name")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if any(p in node.value for p in FORBIDDEN_TEXT):
                    self.add("reads_forbidden", node, detail=f"names {node.value[:60]!r}")
                elif JVM_SQL.search(node.value):
                    self.add("escape", node, detail="SQL that calls into the JVM or reads files")

    def _built_strings(self) -> None:
        """Strings assembled from constant pieces that spell what a plain constant may not."""
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Subscript, ast.Call)):
                built = folded_string(node)
                if built is not None and any(p in built for p in FORBIDDEN_BUILT_TEXT):
                    self.add("reads_forbidden", node, detail=f"builds the string {built[:60]!r} from pieces")

    def _loops(self) -> None:
        if self.kind == "sql":
            return
        data = self._data_names()
        for node in ast.walk(self.tree):
            if self._inside_device(node):
                continue
            iterables: list[ast.expr] = []
            if isinstance(node, ast.For):
                iterables = [node.iter]
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                iterables = [generator.iter for generator in node.generators]
            elif isinstance(node, ast.While):
                iterables = [node.test]
            for iterable in iterables:
                if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
                    continue  # a fixed handful of columns, not one pass per row
                if any(isinstance(n, ast.Name) and n.id in data for n in ast.walk(iterable)):
                    self.add("row_at_a_time", node, detail="a Python loop over the data")
                    break

    def _device_row_copies(self) -> None:
        """Per-row device-to-host copies in a device-capable module: element reads, casts and host
        conversions inside a Python loop over the data, and `.tolist()`/`list(x)`/`.item()` anywhere."""
        if self.kind == "sql" or not self._device_capable():
            return
        data = self._data_names()
        loops = [node for node in ast.walk(self.tree) if self._per_row_loop(node, data) and not self._inside_device(node)]
        elements = {
            name.id
            for loop in loops
            for target, iterable in _loop_targets(loop)
            if _iterates_elements(iterable, data)
            for name in ast.walk(target)
            if isinstance(name, ast.Name)
        }
        copy = "a per-row device-to-host copy"
        for loop in loops:
            for _target, iterable in _loop_targets(loop):
                if _iterates_elements(iterable, data):
                    self.add("host_round_trip", loop, detail=f"iterating {ast.unparse(iterable)} pulls one element at a time: {copy}")
            for node in _per_row_region(loop):
                if self._inside_device(node):
                    continue
                if isinstance(node, ast.Call):
                    name = _call_name(node)
                    if isinstance(node.func, ast.Attribute) and name in ROW_HOST_METHODS:
                        self.add("host_round_trip", node, detail=f".{name}() inside a Python loop over the data: {copy}")
                    elif isinstance(node.func, ast.Name) and name in ROW_HOST_CASTS and len(node.args) == 1:
                        argument = node.args[0]
                        if (isinstance(argument, ast.Subscript) and not isinstance(argument.slice, ast.Slice)) or (isinstance(argument, ast.Name) and argument.id in elements):
                            self.add("host_round_trip", node, detail=f"{name}({ast.unparse(argument)}) of one element inside a Python loop: {copy}")
                elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and not isinstance(node.slice, ast.Slice):
                    owner = node.value
                    if isinstance(owner, ast.Attribute) and owner.attr in ELEMENT_ACCESSORS:
                        self.add("host_round_trip", node, detail=f".{owner.attr}[...] reads one element inside a Python loop: {copy}")
                    elif isinstance(owner, ast.Name) and owner.id in data:
                        self.add("host_round_trip", node, detail=f"{ast.unparse(node)} reads one element inside a Python loop: {copy}")
                elif isinstance(node, ast.Attribute) and node.attr == "values_host":
                    self.add("host_round_trip", node, detail=f".values_host inside a Python loop over the data: {copy}")
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call) or self._inside_device(node):
                continue
            name = _call_name(node)
            if isinstance(node.func, ast.Attribute) and name == "tolist":
                self.add("host_round_trip", node, detail=f".tolist() copies every element of a device array to the host as Python objects: {copy} for each")
            elif isinstance(node.func, ast.Attribute) and name == "item" and not node.args:
                self.add("host_round_trip", node, detail=f".item() copies one element from the device to the host: {copy} when it runs per row")
            elif isinstance(node.func, ast.Name) and name in ("list", "iter") and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in data:
                self.add("host_round_trip", node, detail=f"{name}({node.args[0].id}) pulls the data to the host one element at a time: {copy} for each")

    def _try_blocks(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    caught = ast.unparse(handler.type) if handler.type is not None else "everything"
                    broad = handler.type is None or any(name in caught for name in ("Exception", "BaseException"))
                    if broad and not any(isinstance(n, ast.Raise) for n in ast.walk(handler)):
                        self.add("fallback", handler, detail=f"except {caught} without re-raising")

    def _assignments(self) -> None:
        for node in ast.walk(self.tree):
            targets: list[ast.expr] = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                base = target
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(target, ast.Attribute) and isinstance(base, ast.Name) and base.id in self.modules:
                    self.add("tampering", node, detail=f"assigns {ast.unparse(target)} on an imported module")
        self._input_mutation()

    def _input_mutation(self) -> None:
        """Writes into the entry point's own arguments (`x[mask] = ...`, `x.iloc[...] = ...`, `inplace=True`)."""
        for function in self.tree.body:
            if not (isinstance(function, ast.FunctionDef) and function.name == self.entry_point) or self.kind == "sql":
                continue
            arguments = {a.arg for a in function.args.args}
            rebound = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            inputs = arguments - rebound  # an argument rebound to a copy may be written freely
            for node in ast.walk(function):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
                for target in targets:
                    base = target
                    while isinstance(base, (ast.Attribute, ast.Subscript)):
                        base = base.value
                    if target is not base and isinstance(base, ast.Name) and base.id in inputs:
                        self.add("tampering", node, detail=f"writes into the input {base.id}")
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    owner = node.func.value
                    if isinstance(owner, ast.Name) and owner.id in inputs and any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords):
                        self.add("tampering", node, detail=f"changes the input {owner.id} in place")

    def _literals(self) -> None:
        if not self.forbidden:
            return
        for node in ast.walk(self.tree):
            contexts: list[ast.AST] = []
            if isinstance(node, ast.Compare):
                contexts = [node.left, *node.comparators]
            elif isinstance(node, ast.Dict):
                contexts = [k for k in node.keys if k is not None] + list(node.values)
            elif isinstance(node, ast.Call) and _call_name(node) in ("isin", "when", "where", "select", "lit", "replace", "fillna", "get"):
                contexts = list(node.args)
            for context in contexts:
                for constant in ast.walk(context):
                    if isinstance(constant, ast.Constant) and not isinstance(constant.value, bool) and _hashable(constant.value) and constant.value in self.forbidden:
                        self.add("hard_coded", constant, detail=f"{constant.value!r} comes from the test cases, not the original")

    def _memoization(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for decorator in node.decorator_list:
                    text = ast.unparse(decorator)
                    if any(word in text for word in ("lru_cache", "functools.cache", "cached_property")) or text == "cache":
                        self.add("memoization", decorator, detail=f"@{text} keeps results across calls")
                if self._inside_device(node):
                    continue
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Global, ast.Nonlocal)):
                        self.add("memoization", inner, detail=f"{type(inner).__name__.lower()} {', '.join(inner.names)}")
                    elif isinstance(inner, (ast.Assign, ast.AugAssign)):
                        targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                        for target in targets:
                            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id in self.module_mutables:
                                self.add("memoization", inner, detail=f"writes module-level {target.value.id}")
                    elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in MUTATING_METHODS:
                        owner = inner.func.value
                        if isinstance(owner, ast.Name) and owner.id in self.module_mutables:
                            self.add("memoization", inner, detail=f"mutates module-level {owner.id}")

    # --- facts about the module ------------------------------------------------------------

    def _imported_names(self) -> set[str]:
        names = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names |= {alias.asname or alias.name for alias in node.names if alias.name[:1].islower() or alias.asname}
        return names

    def _device_functions(self) -> set[ast.AST]:
        return {
            node
            for node in ast.walk(self.tree)
            if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)
        }

    def _inside_device(self, target: ast.AST) -> bool:
        return any(target is inner for function in self.device_functions for inner in ast.walk(function))

    def _module_mutables(self) -> set[str]:
        names = set()
        for node in self.tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.List, ast.Set, ast.Call)):
                if isinstance(node.value, ast.Call) and _call_name(node.value) not in ("dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"):
                    continue
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
        return names

    def _data_names(self) -> set[str]:
        """Parameters of the entry point and of every function (data flows through helpers), and names derived from them."""
        data: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef) and node not in self.device_functions:
                data |= {a.arg for a in node.args.args} - {"self"}
        changed = True
        while changed:
            changed = False
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.Set)):
                    continue  # a collection of columns, not a column: iterating it is not per row
                if isinstance(node, ast.Assign) and any(isinstance(n, ast.Name) and n.id in data for n in ast.walk(node.value)):
                    for target in node.targets:
                        for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                            if name not in data:
                                data.add(name)
                                changed = True
        return data

    def _is_mapping(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Dict):
            return True
        if isinstance(node, ast.Name):
            # a dict literal, a dict comprehension or dict(...) bound to the name: a lookup, not a callable
            return any(
                isinstance(s, ast.Assign) and _builds_dict(s.value) and any(isinstance(t, ast.Name) and t.id == node.id for t in s.targets)
                for s in ast.walk(self.tree)
            )
        return False

    def _in_loop(self, target: ast.AST) -> bool:
        return any(isinstance(loop, (ast.For, ast.While)) and any(n is target for n in ast.walk(loop)) for loop in ast.walk(self.tree))

    def _uses_device_library(self) -> bool:
        return bool(self.modules & {"cupy", "cp", "cudf"})

    def _device_capable(self) -> bool:
        return device_capable(self.tree)

    def _per_row_loop(self, node: ast.AST, data: set[str]) -> bool:
        """A Python loop (or comprehension) over something derived from the data, `range(len(x))` included;
        a literal tuple or list of columns is a fixed handful of passes, not one per row."""
        if isinstance(node, ast.While):
            iterables = [node.test]
        elif isinstance(node, (ast.For, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            iterables = [iterable for _, iterable in _loop_targets(node)]
        else:
            return False
        return any(
            not isinstance(iterable, (ast.Tuple, ast.List, ast.Set)) and any(isinstance(n, ast.Name) and n.id in data for n in ast.walk(iterable))
            for iterable in iterables
        )


def device_capable(tree: ast.AST) -> bool:
    """Imports a library whose arrays live on the GPU: CuPy, cuDF, numba.cuda, or aether_mcp.backend (xp, xdf)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in DEVICE_MODULES or name == "numba.cuda" or name.startswith(("numba.cuda.", "aether_mcp.backend")):
                return True
    return False


def _call_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _loop_targets(loop: ast.AST) -> list[tuple[ast.expr, ast.expr]]:
    """(target, iterable) of each `for` in a loop or comprehension."""
    if isinstance(loop, ast.For):
        return [(loop.target, loop.iter)]
    if isinstance(loop, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return [(generator.target, generator.iter) for generator in loop.generators]
    return []


def _per_row_region(loop: ast.AST) -> list[ast.AST]:
    """Every node a loop runs once per step: the body (and a while's test), or a comprehension's all but its first iterable."""
    if isinstance(loop, ast.For):
        roots: list[ast.AST] = [*loop.body, *loop.orelse]
    elif isinstance(loop, ast.While):
        roots = [loop.test, *loop.body, *loop.orelse]
    else:
        roots = [loop.key, loop.value] if isinstance(loop, ast.DictComp) else [loop.elt]
        for position, generator in enumerate(loop.generators):
            roots += generator.ifs + ([generator.iter] if position else [])
    return [node for root in roots for node in ast.walk(root)]


def _iterates_elements(iterable: ast.expr, data: set[str]) -> bool:
    """Iterating this yields the data's elements themselves (`for v in arr`, `zip(a, b)`, `s.items()`), one host copy each."""
    if isinstance(iterable, ast.Name):
        return iterable.id in data
    if isinstance(iterable, ast.Attribute):
        root = iterable
        while isinstance(root, ast.Attribute):
            root = root.value
        return iterable.attr not in NOT_ROWS and isinstance(root, ast.Name) and root.id in data
    if isinstance(iterable, ast.Call):
        if isinstance(iterable.func, ast.Name) and iterable.func.id in ITERATING_CALLS:
            return any(_iterates_elements(argument, data) for argument in iterable.args)
        if isinstance(iterable.func, ast.Attribute) and iterable.func.attr in ("items", "iteritems") and not iterable.args:
            return isinstance(iterable.func.value, ast.Name) and iterable.func.value.id in data
    return False


def _opens_for_writing(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(ch in mode.value for ch in "wax+")


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True



def _builds_dict(value: ast.expr) -> bool:
    return isinstance(value, (ast.Dict, ast.DictComp)) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict")
