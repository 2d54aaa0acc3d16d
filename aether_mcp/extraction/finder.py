"""Finding UDF definitions in a job's source: decorators, `udf(...)` calls, `spark.udf.register`, factories called with literals, and the Spark conf the job sets."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from mcp.server.mcpserver.exceptions import ToolError

from aether_mcp.extraction.definitions import ImportedName, T, UdfDefinition, UnreadableType, dotted, imported_module, imported_name, int_constant, last_name
from aether_mcp.extraction.factories import factory_kind, is_literal, registered_name, returned_udf
from aether_mcp.extraction.pandas_forms import FRAME_FUNCTION_METHODS, read_pandas_form
from aether_mcp.spark_types import TYPE_CLASS_NAMES, UnknownSparkType, parse_type, type_name

# Confs from the job that change what a UDF computes; resource confs do not travel.
SEMANTIC_CONF_PREFIXES = ("spark.sql.", "spark.python.")


def find_udfs(tree: ast.Module, modules: Callable[[ImportedName], ast.Module | None] | None = None) -> list[UdfDefinition]:
    """Every UDF definition in the module, in source order, with duplicates of one function merged.

    `modules`: the tree of the job's own module an import reads (None for a library), so that a factory
    imported from one (`from udfs import make_fee` then `fee = make_fee(2.5)`) is followed there."""
    finder = UdfFinder(tree, modules)
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


class UdfFinder(ast.NodeVisitor):
    def __init__(self, tree: ast.Module, modules: Callable[[ImportedName], ast.Module | None] | None = None) -> None:
        self.tree = tree
        self.modules = modules
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
            factory = factory_kind(call.func if call else decorator)
            if factory is None:
                continue
            args = list(call.args) if call else []
            keywords = {k.arg: k.value for k in call.keywords if k.arg} if call else {}
            return_node = args[0] if args else keywords.get("returnType")
            self._add(
                name=node.name,
                aliases=set(),
                form=f"@{dotted(call.func if call else decorator)}" + ("(...)" if call else ""),
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
            factory = factory_kind(value.func)
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
                    form=f"{target} = {dotted(value.func)}(...)",
                    kind=factory,
                    line=node.lineno,
                    function=function,
                    function_name=function_name,
                    return_node=return_node,
                    keywords=keywords,
                    extra_args=value.args[2:],
                )
        self.generic_visit(node)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "register" and isinstance(registered_name(value), str):
            # `tidy_udf = spark.udf.register("tidy_name", tidy, ...)`: the job calls it by that Python name too
            for found in self.found:
                if found.line == node.lineno and registered_name(value) in {found.name, *found.aliases}:
                    found.aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        made = self._udf_factory(func) if isinstance(func, ast.Call) else None
        if made is not None and not self._assigned(func):
            # `factory(literals)(F.col("x"))` in a select: the UDF is the factory's result, named after the factory
            self._add_from_factory(node, last_name(func.func) or "udf", func, *made, function_name=f"{last_name(func.func)}_udf")
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "register"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "udf"
            and isinstance(registered_name(node), str)
        ):
            registered = registered_name(node)
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

    def _udf_factory(self, call: ast.Call) -> tuple[ast.FunctionDef, ast.Call, ast.FunctionDef | ast.Lambda | None, ImportedName | None] | None:
        """(factory, the udf(...) call it returns, the function that call wraps, where it is imported from) when `call` calls a
        UDF factory: a module-level function, one imported from the job's own module, or a static method of a module-level
        class called through the class (`CommonUdf.to_double()`)."""
        func = call.func
        imported = None
        if isinstance(func, ast.Name):
            factory = next((s for s in self.tree.body if isinstance(s, ast.FunctionDef) and s.name == func.id), None)
            imported = imported_name(self.tree, func.id) if factory is None and self.modules is not None else None
            module = self.modules(imported) if imported is not None and self.modules is not None else None
            factory = next((s for s in module.body if isinstance(s, ast.FunctionDef) and s.name == imported.name), None) if module and imported else factory
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = next((s for s in self.tree.body if isinstance(s, ast.ClassDef) and s.name == func.value.id), None)
            methods = [s for s in owner.body if isinstance(s, ast.FunctionDef) and s.name == func.attr] if owner else []
            static = [m for m in methods if not {last_name(d) for d in m.decorator_list} & {"classmethod", "property"}]
            factory = static[0] if static else None
        else:
            return None
        if factory is None:
            return None
        made = returned_udf(factory)
        if made is None:
            return None
        inner_call, wrapped = made
        return factory, inner_call, wrapped, imported

    def _assigned(self, call: ast.Call) -> bool:
        """Whether `call` is the value of a `name = factory(...)` statement (found by visit_Assign)."""
        return any(d.factory_call is call for d in self.found)

    def _add_from_factory(
        self, node: ast.stmt | ast.expr, target: str, call: ast.Call, factory: ast.FunctionDef, inner_call: ast.Call, wrapped, imported: ImportedName | None, function_name: str | None = None
    ) -> None:
        keywords = {k.arg: k.value for k in inner_call.keywords if k.arg}
        kind = factory_kind(inner_call.func) or "row"
        if isinstance(wrapped, ast.FunctionDef) and wrapped.decorator_list and inner_call in wrapped.decorator_list:
            return_node = inner_call.args[0] if inner_call.args else keywords.get("returnType")
            extra_args = inner_call.args[1:]
        else:
            return_node = inner_call.args[1] if len(inner_call.args) > 1 else keywords.get("returnType")
            extra_args = inner_call.args[2:]
        problem = None
        if wrapped is None:
            problem = f"UDF factory {factory.name}() at line {factory.lineno} returns a UDF of something other than a lambda or a function defined in it; aether-mcp cannot extract it."
        elif not all(is_literal(argument) for argument in [*call.args, *(k.value for k in call.keywords)]) or any(k.arg is None for k in call.keywords):
            problem = (
                f"UDF {target!r} at line {node.lineno} comes from the factory {dotted(call.func)}() called with arguments that are not literals "
                f"({ast.unparse(call)}). Only a factory called with literal arguments can be bound; pass literals, or write the UDF as a "
                "module-level function."
            )
        self.imported = imported  # the factory's module, where its code is extracted from
        self._add(
            problem=problem,
            name=target,
            aliases=set() if function_name is None else {dotted(call.func)},
            form=f"{target} = {dotted(call.func)}(...)" if function_name is None else f"{dotted(call.func)}(...)(...)",
            kind=kind,
            line=node.lineno,
            function=wrapped,
            function_name=function_name or target,
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
            pandas_form, error = read_pandas_form(keywords.get("functionType") or (extra_args[0] if extra_args else None), function, line)
        if error is None:
            if return_node is None and kind == "pandas":
                error = f"pandas UDF {name!r} at line {line} has no return type; pass return_type."
            else:
                try:
                    return_type = T.StringType() if return_node is None else self.read_type(return_node, set())
                except (UnknownSparkType, UnreadableType) as exc:
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

    def read_type(self, node: ast.expr, visiting: set[str]) -> T.DataType:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return parse_type(node.value)
        if isinstance(node, ast.Name) and node.id in self.module_constants and node.id not in visiting:
            return self.read_type(self.module_constants[node.id], visiting | {node.id})
        if isinstance(node, ast.Call):
            cls = last_name(node.func)
            args = list(node.args)
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            if cls in TYPE_CLASS_NAMES:
                return parse_type(TYPE_CLASS_NAMES[cls])
            if cls == "DecimalType":
                precision = int_constant(args[0] if args else keywords.get("precision"), 10)
                scale = int_constant(args[1] if len(args) > 1 else keywords.get("scale"), 0)
                return T.DecimalType(precision, scale)
            if cls == "ArrayType" and (args or "elementType" in keywords):
                return T.ArrayType(self.read_type(args[0] if args else keywords["elementType"], visiting), True)
            if cls == "MapType" and len(args) >= 2:
                return T.MapType(self.read_type(args[0], visiting), self.read_type(args[1], visiting), True)
            if cls == "StructType" and args and isinstance(args[0], (ast.List, ast.Tuple)):
                fields = []
                for item in args[0].elts:
                    if not (isinstance(item, ast.Call) and last_name(item.func) == "StructField" and len(item.args) >= 2):
                        raise UnreadableType(ast.unparse(item))
                    field_name = item.args[0]
                    if not (isinstance(field_name, ast.Constant) and isinstance(field_name.value, str)):
                        raise UnreadableType(ast.unparse(item))
                    fields.append(T.StructField(field_name.value, self.read_type(item.args[1], visiting), True))
                return T.StructType(fields)
        raise UnreadableType(ast.unparse(node))


def _same_type(a: T.DataType | None, b: T.DataType | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and type_name(a) == type_name(b))
