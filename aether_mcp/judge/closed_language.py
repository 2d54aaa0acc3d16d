"""The closed candidate language: what a candidate's code may name, followed to the real objects it names.

The import allow-list (aether_mcp.import_policy) says which modules a candidate may import; this
module says what it may do with them, allowing rather than forbidding:

- attributes are public: no name that starts with `_` (but a few harmless dunders, and a method's
  own `self._x`), no frame or traceback attribute, in code, in a `match` pattern or in a format
  field of a string;
- a module is used only as `module.name`: never passed, returned, stored or bound to a default;
  `alias = module` is the one binding allowed, and the alias is held to the same rules;
- every name is followed, on the modules of this Python installation (the ones the candidate runs
  on), through attribute chains, `from M import name` and aliases, to the object it names: a chain
  that leads to a module off the allow-list (`uuid.os`, `pd.io.common.os`), or to a function that
  reads or writes files, evaluates a string as code or looks a name up at run time, is refused;
- no star import, no annotation written as a string (whatever reads annotations evaluates them);
- the clock and unseeded randomness are refused where the name leads to them
  (`from time import time as moment`, `random.Random(None)`, `getattr(datetime.datetime, "now")`);
- `warnings.warn` is called right where it is named, with a message, a category and a source only: a stack
  level would attribute the warning to a frame above the candidate's (the judge's code when judged, not the job's);
  `warnings.catch_warnings` does not record (a recorded warning names the file it came from);
- of this project, only the backend's API for candidates (`CANDIDATE_API`) may be named.

A name whose value only exists at run time (a public attribute of an object a function returned)
cannot be followed here; the kernel's seal on files and the network, the thread guards and the
watch stand behind this. GPU libraries that are not loaded in this process are not imported just
to read names, so a chain through one is not followed either.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import string
import sys
import sysconfig
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aether_mcp import import_policy

# Dunder attributes a candidate may use: strings, and the constructors a class of its own calls through super().
PUBLIC_DUNDERS = {"__name__", "__doc__", "__version__", "__init__", "__new__", "__post_init__"}
# Frames, code and tracebacks reach every namespace of the process.
FRAME_ATTRIBUTES = {
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame", "tb_next", "f_back", "f_builtins",
    "f_globals", "f_locals", "f_code", "f_trace", "f_lasti", "co_consts", "co_names", "func_globals", "cell_contents",
}  # fmt: skip
# Builtins that reach attributes, namespaces or code by a name given at run time: called directly with what the
# rules can read, never passed around as values (functools.reduce(getattr, ...)).
LOOKUP_BUILTINS = {"getattr", "setattr", "delattr", "hasattr", "vars", "dir", "globals", "locals", "eval", "exec", "compile", "__import__", "open", "breakpoint", "input"}
# Objects of allow-listed libraries that read or write files, run a string as code or look names up by a string.
DENIED_NAMES = {
    "fromfile", "memmap", "load", "loadtxt", "genfromtxt", "fromregex", "save", "savez", "savez_compressed", "savetxt",
    "memory_map", "create_memory_map", "OSFile", "MemoryMappedFile", "PythonFile", "input_stream", "output_stream",
    "get_type_hints", "ForwardRef", "Formatter", "attrgetter", "methodcaller", "read_pickle", "eval", "query",
    "make_dataclass", "singledispatch", "singledispatchmethod", "formatwarning", "showwarning", "getline", "getlines",
    "reset_tzpath", "CompressedInputStream", "CompressedOutputStream", "open_stream", "open_file", "MessageReader",
    "RecordBatchFileReader", "RecordBatchStreamReader", "call_function", "ExternalFunction", "ExternalFunctionPointer",
    "intrinsic", "jitclass", "carray", "farray",
}  # fmt: skip
DENIED_METHODS = {"eval", "query", "tofile", "to_pickle"}  # on any object: a string run as code, a file written
# Methods that call another method named by a string argument (`.agg("eval", ...)`).
BY_NAME_METHODS = {"agg", "aggregate", "transform", "apply", "pipe", "map", "applymap", "resample"}
ALLOWED_DUNDER_NAMES = {"__all__", "__slots__", "__doc__"}  # dunder names a module or class body may bind or read
# Names that say which module, file or loader the code runs in: the judge's differ from the job's.
MODULE_IDENTITY = {"__name__", "__file__", "__spec__", "__loader__", "__package__", "__path__", "__cached__", "__builtins__", "__module__", "__qualname__"}
DEVICE_MODULES = {"cupy", "cupyx", "cudf", "dask_cudf", "pylibcudf", "rmm"}
# What reads the clock or draws randomness from the interpreter's own state, among the allow-listed modules.
CLOCK_METHODS = {"now", "utcnow", "today"}  # datetime.now(), date.today(), pd.Timestamp.now(), on any class
TIME_READERS = {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "thread_time", "thread_time_ns", "clock_gettime", "clock_gettime_ns", "default_timer"}
TIME_DEFAULT_NOW = {"localtime": 0, "gmtime": 0, "ctime": 0, "asctime": 0, "strftime": 1}  # the clock where the time argument is left out
SEEDED = {"Random", "default_rng", "RandomState", "Generator", "SeedSequence", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "BitGenerator"}  # deterministic given a seed
RANDOM_NAMES = {"random", "rand", "randn", "randint", "uniform", "normal", "shuffle", "permutation", "choice", "sample", "random_sample", "random_state"}
UNSEEDED_UUIDS = {"uuid1", "uuid4", "getnode"}
NOW_STRINGS = {"now", "today", "yesterday", "tomorrow"}  # np.datetime64("now"), pd.Timestamp("today"), F.lit("now").cast(...)
PER_PROCESS = {"hash", "id"}  # str hashes are salted per process; ids are addresses
# warnings.warn's arguments a call may give: a stack level or a file prefix to skip would attribute the warning to a
# frame above the candidate's own (the harness's, which is not the job's), and a recorded warning names its file.
WARN_ARGUMENTS = {"message", "category", "source"}
# warnings.catch_warnings' arguments a call may give: a recorded warning names the file and line it is attributed to,
# the candidate's own file as the judge loads it (not as the job does), and `module` swaps in another warnings module.
CATCH_WARNINGS_ARGUMENTS = {"action", "category", "lineno", "append"}
# The one part of this project a candidate may name: the backend's API for candidates (docs/backends.md). The rest of
# the package is the judge's own code (loaded where it judges, not in a job), and the backend module also holds what
# it imports itself (pathlib's Path, os, importlib) and what describes the host (its devices and packages).
CANDIDATE_API = {"aether_mcp": {"backend"}, "aether_mcp.backend": {"xp", "xdf", "array", "series", "struct", "synchronize"}}


class Checker:
    """Reports through `add(rule, node, detail)`: `outside_language`, and `not_deterministic` for the clock and randomness."""

    def __init__(self, tree: ast.AST, original_literals: set[Any], add: Callable[[str, ast.AST, str], None]) -> None:
        self.tree = tree
        self.original_literals = original_literals
        self.add = add
        self.parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        self.bindings: dict[str, list[Any]] = {}
        self.imported: set[str] = set()  # every name an import statement binds
        self._bind()
        self.methods_self = self._method_self_names()

    # --- what names stand for ----------------------------------------------------------------

    def _bind(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.name if alias.asname else alias.name.split(".")[0]
                    self._add_binding(alias.asname or name, installed_module(name))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parent = installed_module(node.module)
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    value = attribute(parent, alias.name) if parent is not None else None
                    if value is None and parent is not None:
                        value = installed_module(f"{node.module}.{alias.name}")
                    self._add_binding(alias.asname or alias.name, value)
        # `xp = np` (a fallback where a GPU library is missing), `common = pd.io.common`: the alias may stand for each
        for _ in range(5):
            grew = False
            for node in ast.walk(self.tree):
                target, value = _simple_binding(node)
                if target is None or value is None:
                    continue
                for found in self.values(value):
                    if found is not None and not any(found is known for known in self.bindings.get(target, [])):
                        self.bindings.setdefault(target, []).append(found)
                        grew = True
            if not grew:
                break

    def _add_binding(self, name: str, value: Any) -> None:
        self.imported.add(name)
        self.bindings.setdefault(name, []).append(value)

    def values(self, node: ast.AST) -> list[Any]:
        """The objects `node` may stand for, where they can be followed (None where an import could not be)."""
        if isinstance(node, ast.Name):
            return list(self.bindings.get(node.id, []))
        if isinstance(node, ast.Attribute):
            return [attribute(owner, node.attr) for owner in self.values(node.value) if owner is not None]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
            name = folded_string(node.args[1])
            if name is not None:
                return [attribute(owner, name) for owner in self.values(node.args[0]) if owner is not None]
        return []

    def _method_self_names(self) -> dict[ast.AST, str]:
        """Each method's first parameter (`self`, `cls`), where the method never rebinds it."""
        found = {}
        for cls in ast.walk(self.tree):
            if not isinstance(cls, ast.ClassDef):
                continue
            for function in cls.body:
                if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.args.args:
                    first = function.args.args[0].arg
                    rebound = any(isinstance(n, ast.Name) and n.id == first and not isinstance(n.ctx, ast.Load) for n in ast.walk(function))
                    if not rebound:
                        found[function] = first
        return found

    def _constructing(self, node: ast.Attribute) -> bool:
        """`super().__init__`, or `self.__init__`/`cls.__new__` in a method of a class of the candidate's own."""
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super" and "super" not in self.imported:
            return True
        parent = self.parents.get(node)
        while isinstance(value, ast.Name) and parent is not None:
            if parent in self.methods_self:
                return value.id == self.methods_self[parent]
            parent = self.parents.get(parent)
        return False

    def _own_private(self, node: ast.Attribute) -> bool:
        """`self._x` in a method of a class of the candidate's own (single underscore only)."""
        if node.attr.startswith("__") or not isinstance(node.value, ast.Name):
            return False
        parent = self.parents.get(node)
        while parent is not None:
            if parent in self.methods_self:
                return node.value.id == self.methods_self[parent]
            parent = self.parents.get(parent)
        return False

    # --- the rules ---------------------------------------------------------------------------

    def run(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute):
                self._attribute(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._name(node)
            elif isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                self.add("outside_language", node, f"from {node.module} import * binds names no rule can see; import each name you use")
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                hidden = [part for part in (*node.module.split("."), *(a.name for a in node.names)) if _private(part) and part != "__future__"]
                if hidden:
                    self.add("outside_language", node, f"imports the private name {hidden[0]}")
                    continue
                beyond = [alias.name for alias in node.names if node.module in CANDIDATE_API and alias.name not in CANDIDATE_API[node.module]]
                if beyond:
                    self.add("outside_language", node, f"from {node.module} import {beyond[0]}: {_api_note(node.module)}")
                    continue
                parent = installed_module(node.module)
                for alias in node.names:
                    value = attribute(parent, alias.name) if parent is not None else None
                    if off_list(value) or (value is not None and not isinstance(value, types.ModuleType) and denied(value)):
                        what = f"the module {value.__name__}, which is not on the import allow-list" if off_list(value) else "a function that reads or writes files, runs a string as code or looks a name up at run time"
                        self.add("outside_language", node, f"from {node.module} import {alias.name} is {what}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and isinstance(self.parents.get(node), ast.ClassDef):
                self.add("outside_language", node, "an import in a class body makes what it imports a class attribute, which the rules cannot follow; import at module level")
            elif isinstance(node, ast.Import) and any(_private(part) for alias in node.names for part in alias.name.split(".")):
                self.add("outside_language", node, "imports a private module")
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id.startswith("__") and node.id not in ALLOWED_DUNDER_NAMES:
                self.add("outside_language", node, f"binds {node.id}, which the interpreter or a library reads as code or metadata")
            elif isinstance(node, ast.MatchClass):
                for name in node.kwd_attrs:
                    if _private(name):
                        self.add("outside_language", node, f"a match pattern reads the attribute {name}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and not isinstance(self.parents.get(node), ast.Expr):
                self._string(node, node.value)  # a string statement (a docstring) is never read by code
            elif isinstance(node, (ast.BinOp, ast.JoinedStr)) or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("join", "replace", "lower", "upper", "strip")):
                built = folded_string(node)
                if built is not None:
                    self._string(node, built)
            if isinstance(node, (ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.AnnAssign)):
                annotation = node.returns if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else node.annotation
                if annotation is not None and any(isinstance(n, ast.Constant) and isinstance(n.value, str) for n in ast.walk(annotation)):
                    self.add("outside_language", annotation, "an annotation written as a string is code that whatever reads annotations evaluates; write it as an expression")

    def _attribute(self, node: ast.Attribute) -> None:
        if node.attr in ("__init__", "__new__") and not self._constructing(node):
            self.add("outside_language", node, f".{node.attr} outside super().{node.attr} or the method's own self: it would run a constructor again on an object made elsewhere")
            return
        if _private(node.attr) and not self._own_private(node):
            self.add("outside_language", node, f"{'frame attribute' if node.attr in FRAME_ATTRIBUTES else 'private attribute'} .{node.attr}")
            return
        if isinstance(node.ctx, ast.Load) and node.attr in CLOCK_METHODS:
            self.add("not_deterministic", node, f".{node.attr} reads the clock")
            return
        if isinstance(node.ctx, ast.Load) and node.attr in DENIED_METHODS and self._called(node):
            self.add("outside_language", node, f".{node.attr}() runs a string as code or writes a file")
            return
        owners = self.values(node.value)
        if self._beyond_api(node, owners, node.attr):
            return
        found = self.values(node)
        if any(off_list(value) for value in found) and not any(off_list(owner) for owner in owners):
            module = next(value for value in found if off_list(value))
            self.add("outside_language", node, f"{ast.unparse(node)} is the module {module.__name__}, which is not on the import allow-list")
            return
        self._used(node, found)

    def _name(self, node: ast.Name) -> None:
        parent = self.parents.get(node)
        main_guard = isinstance(parent, ast.Compare) and parent.left is node and [type(op) for op in parent.ops] in ([ast.Eq], [ast.NotEq]) and _is_main(parent.comparators[0])
        if node.id in MODULE_IDENTITY and not main_guard:  # `__name__ == "__main__"` is false in the judge and in the job alike
            self.add("outside_language", node, f"reads {node.id}, which names where the code runs: the judge's module, not the job's")
            return
        if node.id in LOOKUP_BUILTINS and node.id not in self.imported and not (isinstance(parent, ast.Call) and parent.func is node):
            self.add("outside_language", node, f"passes the builtin {node.id} around as a value")
            return
        if node.id in PER_PROCESS and node.id not in self.imported and isinstance(parent, ast.Call) and parent.func is node:
            self.add("not_deterministic", node, f"{node.id}() differs from process to process (string hashes are salted, ids are addresses)")
            return
        self._used(node, self.values(node))

    def _used(self, node: ast.Name | ast.Attribute, found: list[Any]) -> None:
        """A module may only be `module.name`; a denied object is refused wherever it is named; the clock and randomness too."""
        parent = self.parents.get(node)
        as_base = isinstance(parent, ast.Attribute) and parent.value is node
        # `alias = module` at module level or in a function; in a class body it would be a class attribute (K.alias,
        # self.alias), which names are not followed through
        aliased = (_simple_binding(parent)[1] is node and not isinstance(self.parents.get(parent), ast.ClassDef)) if parent is not None else False
        looked_up = isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in ("getattr", "hasattr") and parent.args[:1] == [node]
        if any(isinstance(value, types.ModuleType) for value in found) and not (as_base or aliased or looked_up):
            self.add("outside_language", node, f"uses the module {ast.unparse(node)} as a value; a module may only be used as {ast.unparse(node)}.name")
            return
        self._objects(node, found)

    def _call(self, node: ast.Call) -> None:
        function = node.func
        if isinstance(function, ast.Name) and function.id in ("getattr", "hasattr") and function.id not in self.imported and len(node.args) >= 2:
            name = folded_string(node.args[1])
            if name is None:
                self.add("outside_language", node, f"{function.id}() with a name computed at run time")
            elif _private(name):
                self.add("outside_language", node, f"{function.id}() of the {'frame' if name in FRAME_ATTRIBUTES else 'private'} attribute {name!r}")
            elif name in CLOCK_METHODS:
                self.add("not_deterministic", node, f"{function.id}(..., {name!r}) reads the clock")
            elif self._beyond_api(node, self.values(node.args[0]), name):
                pass
            else:
                found = self.values(node)
                if any(off_list(value) for value in found):
                    module = next(value for value in found if off_list(value))
                    self.add("outside_language", node, f"{function.id}({ast.unparse(node.args[0])}, {name!r}) is the module {module.__name__}, which is not on the import allow-list")
                else:
                    self._objects(node, found)
            return
        if any(_from_numba(value) for value in self.values(function)):
            self._numba_strings(node)
        if isinstance(function, ast.Attribute) and function.attr in BY_NAME_METHODS:
            named = next((folded_string(a) for a in [*node.args, *(k.value for k in node.keywords)] if folded_string(a) in DENIED_METHODS | DENIED_NAMES), None)
            if named:
                self.add("outside_language", node, f".{function.attr}({named!r}) calls {named} by name")
                return
        if isinstance(function, ast.Attribute) and function.attr in ("format", "format_map") and folded_string(function.value) is None:
            self.add("outside_language", node, f".{function.attr}() of a string the rules cannot read: its fields may read any attribute")
            return
        if isinstance(function, ast.Attribute) and function.attr == "samples" and not any(k.arg == "seed" and self._non_none(k.value) for k in node.keywords):
            self.add("not_deterministic", node, f"{ast.unparse(function)}() without a seed draws from the operating system's randomness")
        if isinstance(function, ast.Attribute) and function.attr == "seed" and _given(node) == 0:
            self.add("not_deterministic", node, f"{ast.unparse(function)}() seeds from the operating system's randomness")
        elif isinstance(function, ast.Attribute) and function.attr == "sample" and not any(k.arg == "random_state" and self._non_none(k.value) for k in node.keywords) and len(node.args) < 5:
            self.add("not_deterministic", node, f"{ast.unparse(function)}() without random_state draws from NumPy's shared random state")

    def _numba_strings(self, node: ast.Call) -> None:
        """numba evaluates a signature given as text (`njit("float64(float64)")`, `objmode(y="int64")`) with Python's
        eval over numba.types and the builtins: only type names and punctuation may appear in it."""
        import builtins

        for argument in [*node.args, *(k.value for k in node.keywords)]:
            for item in ast.walk(argument):
                text = folded_string(item) if isinstance(item, (ast.Constant, ast.BinOp, ast.JoinedStr)) else None
                if text is None:
                    continue
                names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)
                bad = next((n for n in names if n.startswith("_") or hasattr(builtins, n)), None)
                if bad or re.search(r"[^A-Za-z0-9_\[\]\(\),:\s.*>-]", text):
                    self.add("outside_language", item, f"a numba signature string runs as Python: {text[:60]!r} holds {bad or 'characters no type name has'}")
                    return

    def _given(self, call: ast.Call) -> int | None:
        """How many arguments a call surely gives (None, or a module-level name bound to None, not counted); None where
        `*args` or `**kw` hide them."""
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        return sum(1 for v in [*call.args, *(k.value for k in call.keywords)] if self._non_none(v))

    def _non_none(self, node: ast.AST) -> bool:
        """A value that is surely not None: a constant other than None, or a module-level name bound only to such constants."""
        if isinstance(node, ast.Constant):
            return node.value is not None
        if isinstance(node, ast.Name):
            bound = [s.value for s in getattr(self.tree, "body", []) if _simple_binding(s)[0] == node.id]
            parent = self.parents.get(node)
            while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                parent = self.parents.get(parent)
            if parent is not None:  # a parameter whose default is None may well be None
                arguments = parent.args
                positional = [*arguments.posonlyargs, *arguments.args]
                defaults = dict(zip([a.arg for a in positional][len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True))
                defaults |= {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None}
                if node.id in defaults:
                    bound.append(defaults[node.id])
            return not bound or all(not (isinstance(v, ast.Constant) and v.value is None) for v in bound)
        return True

    def _objects(self, node: ast.expr, found: list[Any]) -> None:
        """A denied object is refused wherever it is named (`np.load`, `getattr(np, "load")`); so are the clock and randomness."""
        parent = self.parents.get(node)
        for value in found:
            if value is None or isinstance(value, types.ModuleType):
                continue
            if denied(value):
                self.add("outside_language", node, f"{ast.unparse(node)} reads or writes files, runs a string as code or looks a name up at run time")
                return
            call = parent if isinstance(parent, ast.Call) and parent.func is node else None
            in_with = call is not None and isinstance(self.parents.get(call), ast.withitem) and self.parents[call].context_expr is call
            if value is warnings.catch_warnings and (not in_with or call.args or any(k.arg not in CATCH_WARNINGS_ARGUMENTS and not (k.arg == "record" and isinstance(k.value, ast.Constant) and k.value.value is False) for k in call.keywords)):
                self.add("outside_language", node, f"{ast.unparse(node)} may only open a `with` block, without recording: a recorded warning names the file it came from, which is where the judge loads the candidate")
                return
            if value is warnings.warn and (call is None or len(call.args) > 2 or any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg not in WARN_ARGUMENTS for k in call.keywords)):
                self.add("outside_language", node, f"{ast.unparse(node)} may only be called where it is named, with a message, a category and a source: a stack level names the frames that called the candidate")
                return
            why = nondeterministic(value, call, self._given(call) if call is not None else None)
            if why:
                self.add("not_deterministic", node, f"{ast.unparse(node)} {why}")
                return

    def _beyond_api(self, node: ast.AST, owners: list[Any], name: str) -> bool:
        """Refuses `name` on this project's package or its backend beyond CANDIDATE_API (True where it did)."""
        for owner in owners:
            if isinstance(owner, types.ModuleType) and owner.__name__ in CANDIDATE_API and name not in CANDIDATE_API[owner.__name__]:
                self.add("outside_language", node, f"{owner.__name__}.{name}: {_api_note(owner.__name__)}")
                return True
        return False

    def _string(self, node: ast.AST, text: str) -> None:
        if "__" in text and any(word not in PUBLIC_DUNDERS | {"__main__"} for word in re.findall(r"__\w+?__", text)):
            self.add("outside_language", node, f"the string {text[:60]!r} names a dunder attribute, for a lookup by name")
            return
        if text.strip().lower() in NOW_STRINGS and text not in self.original_literals:
            self.add("not_deterministic", node, f"{text!r} is read as the current date wherever a date is parsed from it")
            return
        if "{" not in text:
            return
        try:
            fields = [field for _, field, _, _ in string.Formatter().parse(text) if field]
        except ValueError:
            return
        for field in fields:
            parts = [part for piece in field.replace("]", "").split("[") for part in piece.split(".")][1:]
            bad = next((part for part in parts if _private(part)), None)
            if bad:
                self.add("outside_language", node, f"the format field {{{field}}} reads the attribute {bad}")
                return

    def _called(self, node: ast.AST) -> bool:
        parent = self.parents.get(node)
        return isinstance(parent, ast.Call) and parent.func is node


def _from_numba(value: Any) -> bool:
    """A function, class or object of numba's (njit, vectorize, cuda.jit, objmode), whose text arguments may be eval'd."""
    if value is None or isinstance(value, types.ModuleType):
        return False
    module = getattr(value, "__module__", None) if isinstance(value, types.FunctionType | type) else type(value).__module__
    return isinstance(module, str) and module.startswith("numba")


def _api_note(module: str) -> str:
    return f"a candidate may name only {', '.join(sorted(CANDIDATE_API[module]))} of {module}; the rest is the judge's own code"


def _is_main(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "__main__"


def _private(name: str) -> bool:
    return (name.startswith("_") and name not in PUBLIC_DUNDERS) or name in FRAME_ATTRIBUTES


def _given(call: ast.Call) -> int | None:
    """How many arguments a call gives, `None` constants not counted; None where `*args` or `**kw` hide them."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    values = [*call.args, *(k.value for k in call.keywords)]
    return sum(1 for v in values if not (isinstance(v, ast.Constant) and v.value is None))


def _simple_binding(node: ast.AST | None) -> tuple[str | None, ast.expr | None]:
    """(target, value) of `name = value` or `name: T = value`; (None, None) for anything else."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id, node.value
    return None, None


def installed_module(name: str) -> types.ModuleType | None:
    """Module `name` of this Python installation, imported here to follow names on it; None for anything off the
    import allow-list, outside the installation (a workspace module is never imported by the judge), a GPU library
    not loaded yet, or one that fails to import."""
    if name == "aether_mcp":  # bound by `import aether_mcp.backend`: CANDIDATE_API says what it may reach
        importlib.import_module("aether_mcp.backend")  # (so that aether_mcp.backend is followed to the module)
        return importlib.import_module(name)
    if not import_policy.allowed(name):
        return None
    top = name.split(".")[0]
    if top == "aether_mcp":
        return importlib.import_module(name)  # aether_mcp.backend, the one harness module a candidate may import
    if top in DEVICE_MODULES and top not in sys.modules:
        return None  # importing a GPU stack only to read names costs seconds
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    if origin not in ("built-in", "frozen") and not (origin and any(Path(origin).resolve().is_relative_to(root) for root in _installation())):
        return None
    try:
        return importlib.import_module(name)
    except Exception:  # an allow-listed library that cannot load here: its names cannot be followed
        return None


def _installation() -> list[Path]:
    paths = sysconfig.get_paths()
    return [Path(paths[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]


def attribute(owner: Any, name: str) -> Any:
    """owner.name where owner is a module or a class (whose attributes are the library's own), else None."""
    if not isinstance(owner, (types.ModuleType, type)) or _private(name):
        return None
    try:
        return getattr(owner, name)
    except Exception:
        return None


def off_list(value: Any) -> bool:
    return isinstance(value, types.ModuleType) and not import_policy.allowed(value.__name__)


def denied(value: Any) -> bool:
    """A function or class that reads or writes files, runs a string as code or looks names up by a string."""
    module = getattr(value, "__module__", None) or ""
    if not isinstance(module, str):
        return False
    if any(module == prefix or module.startswith(prefix + ".") for prefix in import_policy.DENIED_SUBMODULES):
        return True
    return getattr(value, "__name__", None) in DENIED_NAMES and callable(value)


def nondeterministic(value: Any, call: ast.Call | None, given: int | None = None) -> str | None:
    """Why `value` (an imported function, class or bound method; `call` where it is called right there) reads the
    clock or draws unseeded randomness, else None."""
    import random

    owner = getattr(value, "__self__", None)
    name = getattr(value, "__name__", "")
    module = getattr(value, "__module__", None) or getattr(type(owner), "__module__", "") or ""
    if not isinstance(module, str) or not isinstance(name, str):
        return None
    given = (given if given is not None or call is None else _given(call)) if call is not None else None
    if module == "time" and name in TIME_READERS or module == "timeit" and name == "default_timer":
        return "reads the clock"
    if module == "time" and name in TIME_DEFAULT_NOW and (given is None or given <= TIME_DEFAULT_NOW[name]):
        return "reads the clock when no time is given"
    if isinstance(owner, random.Random) or (module.startswith("numpy.random") and owner is not None and type(owner).__name__ in ("RandomState", "Generator")):
        return "draws from the interpreter's shared random state"
    randomish = module == "random" or module.startswith(("numpy.random", "cupy.random", "pyarrow", "pandas"))
    if name in SEEDED and randomish:
        return "seeds itself from the operating system's randomness" if not given else None
    if randomish and name in RANDOM_NAMES and callable(value) or module == "random" and callable(value):
        return "draws random numbers"
    if module == "uuid" and name in UNSEEDED_UUIDS:
        return "draws on the clock, the host or the operating system's randomness"
    return None


def folded_string(node: ast.AST) -> str | None:
    """The string a constant expression spells ("a" + "b", "".join(["a", "b"]), f"{'a'}b", "ba"[::-1]), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = folded_string(node.left), folded_string(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text = folded_string(node.left)
        count = node.right.value if isinstance(node.right, ast.Constant) and isinstance(node.right.value, int) else None
        return text * min(count, 10) if text is not None and count is not None else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            part = folded_string(value.value) if isinstance(value, ast.FormattedValue) else folded_string(value)
            if part is None:
                return None
            parts.append(part)
        return "".join(parts)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        text = folded_string(node.value)
        bounds = [getattr(b, "value", None) if b is not None else None for b in (node.slice.lower, node.slice.upper, node.slice.step)]
        if text is not None and all(b is None or isinstance(b, int) for b in bounds):
            return text[slice(*bounds)]
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" and len(node.args) == 1:
        separator = folded_string(node.func.value)
        items = node.args[0]
        if separator is not None and isinstance(items, (ast.List, ast.Tuple)):
            parts = [folded_string(item) for item in items.elts]
            return separator.join(parts) if all(part is not None for part in parts) else None  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("replace", "lower", "upper", "strip", "format") and not node.keywords:
        text = folded_string(node.func.value)
        arguments = [folded_string(a) for a in node.args]
        if text is not None and all(a is not None for a in arguments):
            try:
                return getattr(text, node.func.attr)(*arguments)
            except (TypeError, ValueError, IndexError, KeyError, AttributeError):
                return None
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("str", "chr") and len(node.args) == 1:
        argument = node.args[0]
        if node.func.id == "chr" and isinstance(argument, ast.Constant) and isinstance(argument.value, int) and 0 <= argument.value < 0x110000:
            return chr(argument.value)
        return folded_string(argument) if node.func.id == "str" else None
    return None
