"""apply_conversion: the job with its UDF replaced by a verified candidate, written next to the original.

Never edits the user's files: it writes `<job>.converted.py` beside the job, the candidate's
module beside it (`<udf>_<candidate>.py`), and a unified diff under `.aether/report/`. The UDF's
definition (a decorated function, a `name = udf(fn, type)` assignment, a factory call or a
`spark.udf.register`) is replaced where it stood:

- sql: `<udf>(*cols)` becomes a plain function that returns the candidate's Column (column names
  as strings still work, as they did for the UDF), with `with_<udf>(frame, name, *cols)` for builds
  made of (name, Column) steps; `X.withColumn(name, <udf>(...))` call sites in the file use it;
- vectorized: `<udf> = spark_arrow_udf(evaluate, type)`, a scalar Arrow UDF, converted exactly as
  byte_compare checked it; call sites (SQL strings of a registered name included) stay as they are.

The result is checked before it is returned: it parses, `ast` finds no Python UDF left for the
function, and it imports in a confined child without starting Spark.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import textwrap
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from aether_mcp.backend import CPU
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes import confined_child
from aether_mcp.workspace import Workspace, job_constants, new_run_id
from aether_mcp.workspace.candidates import BadCandidate, candidate_modules, candidate_path, check_target, declared_target

MARKER = "# Written by aether-mcp apply_conversion"
UDF_FACTORIES = {"udf", "pandas_udf", "arrow_udf"}
IMPORT_TIMEOUT_S = 120


class ApplyConversionResult(BaseModel):
    workspace: str
    candidate: str
    kind: str = Field(description="sql or vectorized: how the UDF was replaced")
    job: str = Field(description="the job file the UDF was defined in (unchanged)")
    converted_path: str = Field(description="<job>.converted.py, next to the job")
    module_path: str = Field(description="the candidate's module, next to the job, imported by the converted job")
    diff_path: str = Field(description="unified diff of the job against the converted job, under .aether/report/")
    replaced_lines: list[int] = Field(description="first and last line of the UDF definition replaced in the job")
    call_sites_rewritten: list[int] = Field(description="lines, in the converted job, of withColumn call sites rewritten to with_<udf> (sql)")
    checks: dict[str, str] = Field(description="parses, no_udf_left, imports: each 'pass' or why not")
    adopt: str = Field(description="what to do to use it")


def apply_conversion(root: SandboxRoot, workspace: str, candidate: str) -> ApplyConversionResult:
    from aether_mcp.tools.workspaces import workspace_status

    opened = Workspace.open_intact(root, workspace)
    target = check_target(opened, candidate if candidate.startswith("candidate:") else f"candidate:{candidate}")
    name = target.removeprefix("candidate:")
    source = candidate_path(opened, target).read_text(encoding="utf-8")
    try:
        kind = declared_target(source, name)
    except BadCandidate as exc:
        raise ToolError(f"{exc}; fix the candidate and verify it again.") from None
    if kind == "kernel":
        raise ToolError("a kernel candidate needs a GPU at every run of the job; apply_conversion writes sql and vectorized candidates into jobs. Convert to a vectorized candidate, or wire the kernel by hand from the report.")
    status = workspace_status(root, workspace)
    compare, audit = status.last_compares.get(name), status.last_audits.get(name)
    if not (compare and compare.equal and not compare.candidate_changed_since and audit and audit.verdict.startswith("PASS") and not audit.candidate_changed_since):
        raise ToolError(
            f"candidate {name} is not verified on its current file: apply_conversion needs byte_compare equal and audit_candidate PASS on these bytes. "
            f"Run byte_compare(workspace, {name!r}) and audit_candidate(workspace, {name!r}) first."
        )
    if _imports_candidate_modules(source, opened):
        raise ToolError(f"candidate/{name}.py imports other candidate/ modules; apply_conversion copies one module next to the job. Inline what it imports, verify again, then apply.")
    udf = opened.config.udf
    job = root.resolve(udf.source, what="the job")
    job_text = job.read_text(encoding="utf-8")
    module_name = f"{udf.name}_{name}"
    converted_path = job.with_name(f"{job.stem}.converted.py")
    module_path = job.with_name(f"{module_name}.py")
    for path in (converted_path, module_path):
        if path.exists() and not path.read_text(encoding="utf-8", errors="replace").startswith(MARKER):
            raise ToolError(f"{root.relative(path)} exists and was not written by apply_conversion; it is never overwritten. Move it away, then apply again.")
    converted, replaced, rewritten = convert_source(job_text, udf, kind, module_name)
    checks = {"parses": "pass", "no_udf_left": no_udf_left(converted, udf)}
    if checks["no_udf_left"] != "pass":
        raise ToolError(f"the converted job still defines a Python UDF for {udf.name}: {checks['no_udf_left']}; nothing was written.")
    inlined = job_constants.inline(opened, source, f"candidate/{name}.py")  # the job's constants it imports, as they were judged
    constants = f"; the constants it imports from the job's modules inlined as judged ({', '.join(sorted(opened.config.udf.modules))})" if inlined != source else ""
    module_text = f"{MARKER} from {opened.path.name}/candidate/{name}.py (sha256 {hashlib.sha256(source.encode()).hexdigest()[:16]}){constants}\n{inlined}"
    converted_text = f"{MARKER}: {udf.source} with {udf.name} replaced by candidate {name} ({kind}); review, then replace the job with it.\n{converted}"
    checks["imports"] = _import_check(opened, job.parent, converted_text, module_name, module_text, converted_path.name)
    if checks["imports"] != "pass":
        raise ToolError(f"the converted job does not import cleanly: {checks['imports']}; nothing was written next to the job.")
    module_path.write_text(module_text, encoding="utf-8")
    converted_path.write_text(converted_text, encoding="utf-8")
    report = opened.state_dir / "report"
    report.mkdir(parents=True, exist_ok=True)
    diff_path = report / f"{job.stem}.converted.diff"
    diff = difflib.unified_diff(job_text.splitlines(keepends=True), converted_text.splitlines(keepends=True), fromfile=udf.source, tofile=root.relative(converted_path))
    diff_path.write_text("".join(diff), encoding="utf-8")
    if kind == "sql":
        adopt = f"Replace {udf.source} with {root.relative(converted_path)} and keep {module_path.name} beside it: {udf.name} is now a Spark expression, no Python runs for it."
    else:
        adopt = (
            f"Replace {udf.source} with {root.relative(converted_path)}, keep {module_path.name} beside it and ship it to the executors "
            f"(spark-submit --py-files {module_path.name}); the executors' Python needs aether-mcp installed for spark_arrow_udf's conversion."
        )
    return ApplyConversionResult(
        workspace=str(opened.path),
        candidate=name,
        kind=kind,
        job=str(job),
        converted_path=str(converted_path),
        module_path=str(module_path),
        diff_path=str(diff_path),
        replaced_lines=list(replaced),
        call_sites_rewritten=rewritten,
        checks=checks,
        adopt=adopt,
    )


def convert_source(text: str, udf: Any, kind: str, module_name: str) -> tuple[str, tuple[int, int], list[int]]:
    """(the job's source with the UDF's definition replaced, the lines replaced, call-site lines rewritten)."""
    tree = ast.parse(text)
    if udf.form.endswith("(...)(...)"):
        raise ToolError(
            f"{udf.name} is made by an inline factory call ({udf.form} at {udf.source}:{udf.source_line}), which no statement of the job defines, so "
            "apply_conversion has nothing to replace. Give the factory's result a name in the job (fee = make_fee(0.029)) and call that, then "
            "init_workspace that name and verify your candidate there (copy candidate/ across); or wire the candidate by hand from the report."
        )
    statement = _definition(tree, udf)
    if statement is None:
        raise ToolError(f"cannot find {udf.name}'s definition ({udf.form}) at {udf.source}:{udf.source_line} any more; the job changed since init_workspace. Start a new workspace from the job as it is.")
    first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
    last = statement.end_lineno or statement.lineno
    lines = text.splitlines(keepends=True)
    indent = " " * statement.col_offset
    register = _register_call(statement)
    if kind == "sql" and register is not None:
        raise ToolError(
            f"{udf.name} is registered for SQL text ({udf.source}:{statement.lineno}); a sql candidate is a Column, which SQL text cannot call. "
            "Use a vectorized candidate (registered as an Arrow UDF), or move those SQL expressions to the DataFrame API."
        )
    bound = [ast.unparse(target) for target in statement.targets] if isinstance(statement, ast.Assign) and register is not None else []
    replacement = _replacement(udf, kind, module_name, register, bound)
    block = textwrap.indent(replacement, indent)
    converted = "".join(lines[: first - 1]) + block + "".join(lines[last:])
    rewritten: list[int] = []
    if kind == "sql":
        converted, rewritten = _rewrite_with_column(converted, udf.name)
    return converted, (first, last), rewritten


def _definition(tree: ast.Module, udf: Any) -> ast.stmt | None:
    """The statement that defines the UDF: covering its recorded line and naming it."""
    names = {udf.name, udf.function}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        if not start <= udf.source_line <= (node.end_lineno or node.lineno):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names and node.decorator_list:
            return node
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == udf.name for t in node.targets):
            return node
        if isinstance(node, (ast.Expr, ast.Assign)) and _register_call(node) is not None:  # `spark.udf.register(...)`, or `name = spark.udf.register(...)`
            return node
    return None


def _register_call(statement: ast.stmt) -> ast.Call | None:
    value = statement.value if isinstance(statement, (ast.Expr, ast.Assign)) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("register", "registerFunction"):
        return value
    return None


def _replacement(udf: Any, kind: str, module_name: str, register: ast.Call | None, bound: list[str] | None = None) -> str:
    """The code that takes the definition's place; `bound`: the names the job gave what register() returned, bound again to the registered UDF."""
    if kind == "sql":
        return textwrap.dedent(
            f'''\
            from {module_name} import build as _{udf.name}_build


            def {udf.name}(*cols):
                """{udf.name} as a Spark expression, without a Python UDF (verified by aether-mcp)."""
                from pyspark.sql import Column
                from pyspark.sql import functions as F

                built = _{udf.name}_build(*[F.col(c) if isinstance(c, str) else c for c in cols])
                if not isinstance(built, Column):
                    raise TypeError("{udf.name}'s build returns (name, Column) steps: add it with with_{udf.name}(frame, name, *cols)")
                return built


            def with_{udf.name}(frame, name, *cols):
                """frame with column `name` = {udf.name}(*cols), computed in Spark (no Python UDF)."""
                from pyspark.sql import Column
                from pyspark.sql import functions as F

                built = _{udf.name}_build(*[F.col(c) if isinstance(c, str) else c for c in cols])
                if isinstance(built, Column):
                    return frame.withColumn(name, built)
                for step, column in built:
                    frame = frame.withColumn(step, column)
                return frame.withColumn(name, F.col(built[-1][0])).drop(*[step for step, _ in built if step != name])
            '''
        )
    wrap = "spark_arrow_aggregate" if udf.pandas_form == "aggregate" else "spark_arrow_udf"
    code = [
        f"from aether_mcp.arrow_udf import {wrap}",
        f"from {module_name} import evaluate as _{udf.name}_evaluate",
        "",
        f'{udf.name} = {wrap}(_{udf.name}_evaluate, "{udf.return_type}")',
    ]
    if register is not None:
        registrar = ast.unparse(register.func)
        registered = ast.unparse(register.args[0]) if register.args else repr(udf.name)
        code.append("".join(f"{name} = " for name in bound or []) + f"{registrar}({registered}, {udf.name})")
    return "\n".join(code) + "\n"


def _rewrite_with_column(text: str, udf_name: str) -> tuple[str, list[int]]:
    """`X.withColumn(name, <udf>(...))` statements turned into `with_<udf>(X, name, ...)`."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.While, ast.With, ast.Try)):
            segment = "".join(lines[node.lineno - 1 : node.end_lineno])
            if f"{udf_name}(" not in segment or ".withColumn(" not in segment:
                continue
            rewritten = with_column_rewrite(ast.unparse(node), udf_name, f"with_{udf_name}")
            if rewritten:
                edits.append((node.lineno, node.end_lineno or node.lineno, textwrap.indent(rewritten, " " * node.col_offset) + "\n"))
    for first, last, new in sorted(edits, reverse=True):
        lines[first - 1 : last] = [new]
    return "".join(lines), sorted(first for first, _, _ in edits)


def no_udf_left(text: str, udf: Any) -> str:
    """'pass', or where the converted source still makes a Python UDF of the function."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return f"does not parse: line {exc.lineno}: {exc.msg}"
    names = {udf.name, udf.function}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            for decorator in node.decorator_list:
                if _factory_name(decorator.func if isinstance(decorator, ast.Call) else decorator) in UDF_FACTORIES:
                    return f"line {decorator.lineno}: {node.name} is still decorated with {ast.unparse(decorator)}"
        if isinstance(node, ast.Call):
            factory = _factory_name(node.func)
            mentions = {n.id for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Name)}
            if factory in UDF_FACTORIES and mentions & names:
                return f"line {node.lineno}: {ast.unparse(node)[:120]}"
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("register", "registerFunction") and udf.function in mentions and udf.function != udf.name:
                return f"line {node.lineno}: {udf.function} is still registered as a Python UDF"
    return "pass"


def _factory_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _imports_candidate_modules(source: str, opened: Workspace) -> bool:
    siblings = set(candidate_modules(opened))
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] in siblings for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] in siblings:
            return True
    return False


def _import_check(opened: Workspace, job_dir: Path, converted_text: str, module_name: str, module_text: str, converted_name: str) -> str:
    """Import the converted job (and the candidate module) in a confined child, Spark forbidden to start; 'pass' or why not."""
    folder = opened.state_dir / "report" / "import-checks" / new_run_id()
    folder.mkdir(parents=True)
    request = {"files": {converted_name: converted_text, f"{module_name}.py": module_text}, "job_dir": str(job_dir), "main": converted_name}
    child = confined_child.run(
        opened, "aether_mcp.confined.import_check", request, folder=folder, result_name="result.json", timeout_s=IMPORT_TIMEOUT_S, cancel=None, read=[str(job_dir)], env_extra=CPU.env()
    )
    if child.ended.timed_out:
        return f"importing it took more than {IMPORT_TIMEOUT_S}s (log: {folder / 'run.log'})"
    raw = child.raw or {}
    if raw.get("imported"):
        return "pass" if child.confinement.confined else "pass (unconfined: " + child.confinement.how + ")"
    return raw.get("error") or f"the import check failed (exit {child.ended.returncode}): {child.ended.tail[-600:]}"


def with_column_rewrite(statement: str, udf_name: str, helper: str) -> str | None:
    """The statement with each `X.withColumn(name, udf(args))` turned into `helper(X, name, args)`; None if it has none."""
    try:
        tree = ast.parse(statement)
    except SyntaxError:
        return None

    class Rewrite(ast.NodeTransformer):
        changed = False

        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "withColumn"
                and len(node.args) == 2
                and isinstance(node.args[1], ast.Call)
                and isinstance(node.args[1].func, ast.Name)
                and node.args[1].func.id == udf_name
            ):
                Rewrite.changed = True
                return ast.Call(func=ast.Name(helper, ast.Load()), args=[node.func.value, node.args[0], *node.args[1].args], keywords=[])
            return node

    rewritten = Rewrite().visit(tree)
    return ast.unparse(rewritten) if Rewrite.changed else None
