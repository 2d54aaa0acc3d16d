"""audit_tests: a static and dynamic review of the workspace's tests for patterns that pin nothing.

Static, over tests/test_*.py (read with `ast`, never run in the server): tests without
assertions, tests whose every assertion is weak (non-null, row count, type), skips and xfails,
try/except that swallows failures, float tolerances wider than the exact policy, tests that
never reach `udf_under_test`, and duplicated cases in tests/cases.py. Dynamic: the suite runs
against canaries (a target that returns null for every row, and ones that return a constant);
a test that passes against all of them checks no value.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from aether_mcp.judge.case_literals import NotALiteral, literal
from aether_mcp.path_guard import SandboxRoot
from aether_mcp.processes.worker_pool import WorkerPool
from aether_mcp.spark_types import parse_type
from aether_mcp.tools.suite_runs import run_suite
from aether_mcp.wire import value_codec
from aether_mcp.wire.value_codec import Struct
from aether_mcp.workspace import TESTS_DIR, Workspace, new_run_id

Rule = Literal[
    "no_assertion", "weak_assertion", "skipped", "swallowed_failure", "tolerance", "no_udf_call", "duplicate_case", "passes_on_canary"
]
MAX_LISTED_FINDINGS = 50  # in a result; more go to a record on disk
SKIP_MARKERS = ("skip", "skipif", "xfail", "importorskip")
TOLERANCE_CALLS = ("approx", "isclose", "allclose", "assert_allclose", "assert_almost_equal", "assertAlmostEqual")
WHY = {
    "no_assertion": "it runs code but checks nothing, so any conversion passes it",
    "weak_assertion": "it only checks that a value exists, how many rows came back or their type, never the values",
    "skipped": "a skipped or expected-to-fail test does not pin behaviour; a conversion can break it silently",
    "swallowed_failure": "the except clause catches the assertion (or every error) without re-raising, so the test cannot fail",
    "tolerance": "the comparison policy is exact (bit for bit); a tolerance hides real differences such as rounding",
    "no_udf_call": "it never evaluates the target through udf_under_test, so it says nothing about the UDF",
    "duplicate_case": "the same arguments appear twice in CASES; the copy adds nothing (and may contradict the first)",
    "passes_on_canary": "it also passes when the target returns null or a fixed value for every row, so it pins no value",
}
FIX = {
    "no_assertion": "assert on the outputs, e.g. compare with expected values using aether_mcp.judge.compare.difference",
    "weak_assertion": "compare the outputs with the original's exact values (record them with record_cases)",
    "skipped": "remove the skip/xfail; if the case is not wanted, delete it openly",
    "swallowed_failure": "remove the try/except, or re-raise; use pytest.raises for an expected exception",
    "tolerance": "compare exactly with difference(); a tolerance must be declared in aether.toml as a deviation",
    "no_udf_call": "evaluate rows with the udf_under_test fixture and check what it returns",
    "duplicate_case": "delete the duplicated entry from tests/cases.py",
    "passes_on_canary": "assert on the actual values returned, not only on their presence",
}


class Finding(BaseModel):
    rule: Rule
    file: str
    line: int
    test: str | None
    why: str
    fix: str


class AuditTestsResult(BaseModel):
    workspace: str
    findings: list[Finding] = Field(description="at most 50, in file and line order")
    findings_left_out: int = Field(0, description="findings not listed here; record_path has them all")
    record_path: str | None = Field(None, description="every finding, when more than are listed (readable with read_file)")
    tests_reviewed: int
    canaries: list[str]
    clean: bool


def audit_tests(root: SandboxRoot, workers: WorkerPool, workspace: str) -> AuditTestsResult:
    opened = Workspace.open_intact(root, workspace)
    findings: list[Finding] = []
    reviewed = 0
    for path in sorted((opened.path / TESTS_DIR).glob("test_*.py")):
        rel = path.relative_to(opened.path).as_posix()
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue  # run_tests reports the error itself
        review = _FileReview(tree)
        for test in review.tests():
            reviewed += 1
            for rule, line in review.problems(test):
                findings.append(_finding(rule, rel, line, test.name))
    findings += _duplicate_cases(opened)
    canaries = _canary_values(opened)
    if reviewed:
        findings += _canary_findings(opened, workers, canaries)
    findings.sort(key=lambda f: (f.file, f.line, f.rule))
    record_path = None
    if len(findings) > MAX_LISTED_FINDINGS:
        record_path = opened.state_dir / "runs" / new_run_id("audit-tests") / "findings.json"
        record_path.parent.mkdir(parents=True)
        record_path.write_text(json.dumps([f.model_dump() for f in findings], indent=1), encoding="utf-8")
    return AuditTestsResult(
        workspace=str(opened.path),
        findings=findings[:MAX_LISTED_FINDINGS],
        findings_left_out=max(0, len(findings) - MAX_LISTED_FINDINGS),
        record_path=None if record_path is None else str(record_path),
        tests_reviewed=reviewed,
        canaries=[repr(value) for value in canaries],
        clean=not findings,
    )


def _finding(rule: str, file: str, line: int, test: str | None) -> Finding:
    return Finding(rule=rule, file=file, line=line, test=test, why=WHY[rule], fix=FIX[rule])  # type: ignore[arg-type]


class _FileReview:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.fixtures = {name for name, node in self.functions.items() if any("fixture" in ast.unparse(d) for d in node.decorator_list)}

    def tests(self) -> list[ast.FunctionDef]:
        found = [n for n in self.tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        for cls in (n for n in self.tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")):
            found += [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
        return found

    def problems(self, test: ast.FunctionDef) -> list[tuple[str, int]]:
        problems: list[tuple[str, int]] = []
        for decorator in test.decorator_list:
            if any(marker in ast.unparse(decorator) for marker in ("skip", "xfail")):
                problems.append(("skipped", decorator.lineno))
        calls = [n for n in ast.walk(test) if isinstance(n, ast.Call)]
        for call in calls:
            name = _call_name(call)
            if name in SKIP_MARKERS and "pytest" in ast.unparse(call.func):
                problems.append(("skipped", call.lineno))
            if name in TOLERANCE_CALLS:
                problems.append(("tolerance", call.lineno))
        for node in ast.walk(test):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call) and _call_name(node.left) == "abs" and isinstance(node.ops[0], (ast.Lt, ast.LtE)):
                problems.append(("tolerance", node.lineno))
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    caught = ast.unparse(handler.type) if handler.type is not None else ""
                    broad = handler.type is None or any(name in caught for name in ("AssertionError", "Exception", "BaseException"))
                    if broad and not any(isinstance(n, ast.Raise) for n in ast.walk(handler)):
                        problems.append(("swallowed_failure", handler.lineno))
        asserts = self._assertions(test, set())
        if not asserts:
            problems.append(("no_assertion", test.lineno))
        elif all(_weak(a) for a in asserts if isinstance(a, ast.Assert)) and not any(not isinstance(a, ast.Assert) for a in asserts):
            problems.append(("weak_assertion", asserts[0].lineno))
        if not self._reaches_udf(test, set()):
            problems.append(("no_udf_call", test.lineno))
        return problems

    def _assertions(self, function: ast.FunctionDef, seen: set[str]) -> list[ast.AST]:
        """Assert statements and pytest.raises blocks in the test, and in same-file helpers it calls."""
        seen.add(function.name)
        found: list[ast.AST] = []
        for node in ast.walk(function):
            if isinstance(node, ast.Assert):
                found.append(node)
            elif isinstance(node, ast.With) and any("raises" in ast.unparse(item.context_expr) for item in node.items):
                found.append(node)
            elif isinstance(node, ast.Call) and _call_name(node) in self.functions and _call_name(node) not in seen and _call_name(node) not in self.fixtures:
                found += self._assertions(self.functions[_call_name(node)], seen)  # type: ignore[index]
        return found

    def _reaches_udf(self, function: ast.FunctionDef, seen: set[str]) -> bool:
        seen.add(function.name)
        parameters = [a.arg for a in function.args.args]
        if "udf_under_test" in parameters or any(isinstance(n, ast.Name) and n.id == "udf_under_test" for n in ast.walk(function)):
            return True
        for name in parameters:
            if name in self.fixtures and name not in seen and self._reaches_udf(self.functions[name], seen):  # type: ignore[arg-type]
                return True
        return False


def _weak(node: ast.Assert) -> bool:
    test = node.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.IsNot, ast.NotEq)) and isinstance(right, ast.Constant) and right.value is None:
            return True
        if isinstance(test.left, ast.Call) and _call_name(test.left) in ("len", "type"):
            return True
    if isinstance(test, ast.Call) and _call_name(test) in ("isinstance", "len", "bool", "all", "any"):
        return not _compares_values(test)
    if isinstance(test, (ast.Name, ast.Attribute, ast.Subscript)):
        return True
    return False


def _compares_values(call: ast.Call) -> bool:
    return any(isinstance(n, ast.Compare) and any(isinstance(op, (ast.Eq, ast.Is)) for op in n.ops) for n in ast.walk(call))


def _call_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _duplicate_cases(workspace: Workspace) -> list[Finding]:
    path = workspace.path / TESTS_DIR / "cases.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    findings = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CASES" for t in statement.targets) and isinstance(statement.value, ast.List):
            seen: dict[str, int] = {}
            for entry in statement.value.elts:
                try:
                    case = literal(entry)
                    key = value_codec.dumps(case.get("args")) if isinstance(case, dict) else None
                except (NotALiteral, TypeError):
                    continue
                if key is None:
                    continue
                if key in seen:
                    findings.append(_finding("duplicate_case", f"{TESTS_DIR}/cases.py", entry.lineno, None))
                else:
                    seen[key] = entry.lineno
    return findings


def _canary_values(workspace: Workspace) -> list[object]:
    """Null, and fixed values of the return type that no real case is likely to expect."""
    data_type = parse_type(workspace.config.udf.return_type)
    if data_type.typeName() == "boolean":
        return [None, True, False]
    fixed = _canary(data_type)
    return [None] if fixed is None else [None, fixed]


def _canary(data_type: object) -> object:
    """One fixed value of `data_type` (None where there is none): a struct of canaries, an empty array or map."""
    import datetime as dt
    from decimal import Decimal

    from pyspark.sql import types as T

    if isinstance(data_type, T.BooleanType):
        return True
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return 97
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return 1234.5678
    if isinstance(data_type, T.DecimalType):
        return Decimal(7).scaleb(-data_type.scale)
    if isinstance(data_type, T.StringType):
        return "aether-canary"
    if isinstance(data_type, T.BinaryType):
        return b"aether-canary"
    if isinstance(data_type, T.DateType):
        return dt.date(1901, 2, 3)
    if isinstance(data_type, T.TimestampType):
        return dt.datetime(1901, 2, 3, 4, 5, 6)
    if isinstance(data_type, T.ArrayType):
        return []
    if isinstance(data_type, T.MapType):
        return {}
    if isinstance(data_type, T.StructType):
        return Struct((field.name, _canary(field.dataType)) for field in data_type.fields)
    return None


def _canary_findings(workspace: Workspace, workers: WorkerPool, canaries: list[object]) -> list[Finding]:
    passing: set[str] | None = None
    for value in canaries:
        result = run_suite(workspace, "canary:" + json.dumps(value_codec.encode(value)), workers, timeout_s=120)
        passed = {t.nodeid for t in result.tests if t.outcome in ("passed", "xpassed")}
        passing = passed if passing is None else passing & passed
    findings = []
    for nodeid in sorted(passing or []):
        file, _, test = nodeid.partition("::")
        findings.append(_finding("passes_on_canary", file, _test_line(workspace.path / file, test), test))
    return findings


def _test_line(path: Path, test: str) -> int:
    name = test.split("[")[0].split("::")[-1]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return 1
    return next((n.lineno for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), 1)
