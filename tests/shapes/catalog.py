"""UDFs in the shapes public PySpark jobs write them, each folder a small project with an honest candidate.

The fixtures of tests/test_udf_shapes.py and of benchmarks/udf_shapes.py. Each shape is a folder
here: the job (and the modules it imports, laid out as real projects lay them out) and
`candidate.py`, a conversion written by hand. `run_shape` takes one through the loop an agent
starts with: init_workspace, record_cases, run_tests on the original, byte_compare of the candidate,
and the job rewritten as apply_conversion rewrites it (`apply_step`: no Python UDF left, and every
name the job calls the UDF by still bound).
A shape the server cannot take yet says so in `refused`: init_workspace must refuse it up front,
with a reason matching that pattern.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STEPS = ("init_workspace", "record_cases", "run_tests", "byte_compare", "apply")


@dataclass(frozen=True)
class Shape:
    name: str  # the folder under tests/shapes
    covers: str  # the shape it stands for
    source: str  # the job file init_workspace is pointed at, relative to the folder
    udf: str
    inputs: list[list[Any]]  # rows for record_cases, in its JSON form
    arg_types: dict[str, str] | None = None
    refused: str | None = None  # init_workspace must refuse it, with a reason matching this
    folder: str | None = None  # the folder, when another shape's (a second candidate for the same job); else the name
    candidate: str = "candidate.py"

    @property
    def path(self) -> Path:
        return HERE / (self.folder or self.name)


SHAPES = [
    Shape("star_import", "1: `from math import *`", "job.py", "norm", [[3.0, 4.0], [None, 1.0], ["NaN", 0.0], [-0.0, 0.0]]),
    Shape("python2_names", "2: Python 2 `unicode()` in a branch a string never takes", "job.py", "shout", [["abc"], ["Straße"], [None]]),
    Shape(
        "udfs_module",
        "3: `udf(grid_km, DoubleType())` after `from geo import grid_km`",
        "job.py",
        "grid_km_udf",
        [[40.7, -74.0, 40.8, -73.9], [None, 0.0, 0.0, 0.0], ["NaN", 0.0, 1.0, 1.0]],
        {"lat1": "double", "lon1": "double", "lat2": "double", "lon2": "double"},
    ),
    Shape("package_layout", "3: relative, star and top-package imports inside a package", "proj/jobs/customers.py", "display_name", [["  ada   lovelace "], ["o'brien"], [None], [""]]),
    Shape("udf_in_udfs_module", "3: a `@udf` in udfs.py that the job imports", "job.py", "is_valid_email", [["ada@example.com"], [" Bob@Example.org "], ["nope"], [None]]),
    Shape("local_module_constant", "4: `from patterns import SALARY_RE` beside the job, imported by the candidate too", "job.py", "strip_salary", [["$1,200"], ["n/a"], [None]]),
    Shape("module_attribute", "4: `import settings` then `settings.MIN_AGE`", "job.py", "age_band", [[17], [18], [65], [66], [None]]),
    Shape("keyword_register", "5: `spark.udf.register(name=..., f=..., returnType=...)`, date parsing", "job.py", "custom_to_date", [["2024-02-29"], ["2023-02-29"], [" 2024-1-5 "], ["soon"], [None]], {"text": "string"}),
    Shape("date_parsing", "a timestamp string parsed with strptime, its format shown in a comment", "job.py", "signup_hour", [["2015-04-21 16:56:08 UTC"], ["2024-02-29 00:00:00 UTC"], [None]], {"created_at": "string"}),
    Shape("static_factory", "6: a class's static method as the factory (`CommonUdf.Clamp(0.0, 100.0)`)", "job.py", "score_0_100", [[-3.5], [42.0], [250.0], ["NaN"], [None]], {"value": "double"}),
    Shape("cross_file_factory", "6: a factory defined in fees.py, called with a literal in the job", "job.py", "card_fee", [[100.0], [0.0], [None], [-5.0]], {"amount": "double"}),
    Shape("factory", "6: a UDF factory called with literals", "job.py", "from_depot", [[40.7, -74.0], [41.0, -73.5], [None, 0.0]], {"a": "double", "b": "double"}),
    Shape("import_guard", "9: `try: import regex as re` / `except ImportError: import re`", "job.py", "dialled", [["+1 (555) 010-9999"], ["n/a"], [None]]),
    Shape("hint_mismatch", "11: a `float` hint on a bigint column, corrected by arg_types", "job.py", "per_unit", [[10.0, 4], [10.0, 0], [None, 1], [1.0, None]], {"units": "bigint"}),
    Shape("lambda_udf", "a lambda: `F.udf(lambda s: ..., StringType())`", "job.py", "normalize_city", [["  Paris "], [""], [None]], {"s": "string"}),
    Shape("dict_lookup", "a dict lookup with a default", "job.py", "country_name", [["us"], [" gb "], ["XX"], [""], [None]]),
    Shape("regex_extract", "a compiled regex's group, as a bigint", "job.py", "order_number_udf", [["see ORD-12345 today"], ["ORD-12"], [None]], {"note": "string"}),
    Shape("third_party_numpy", "a third-party import: NumPy", "job.py", "log_ratio", [[1.0, 0.0], [-1.0, 0.0], [None, 1.0], ["NaN", 1.0]]),
    Shape("pandas_scalar", "a scalar `@pandas_udf`", "job.py", "to_celsius", [[212.0], [-40.0], ["NaN"], [None]], {"fahrenheit": "double"}),
    Shape("positional_register", "`spark.udf.register(\"is_weekend\", fn, BooleanType())` over a date", "job.py", "is_weekend", [["2024-06-01"], ["2024-06-03"], [None]], {"day": "date"}),
    Shape("udf_in_main", "a `@F.udf` defined inside main(), reading module constants", "job.py", "size_class", [[5.0], [100.0], [1000.0], ["NaN"], [None]], {"amount": "double"}),
    Shape("array_return", "an `ArrayType(StringType())` result", "job.py", "tags", [["a, B ,,c"], [""], [None]]),
    Shape("timestamp_hour", "a timestamp argument", "job.py", "hour_udf", [["2024-03-10T02:30:00"], [None]], {"ts": "timestamp"}),
    Shape("class_helper", "a module-level class with a classmethod", "job.py", "tier", [[5000], [999], [250], [0], [None]]),
    Shape("or_default", "`(x or '')` defaults and an f-string", "job.py", "display", [["Ada", " Lovelace"], [None, "X"], [None, None], ["", " "]]),
    Shape("struct_return", "7: a `struct<major:bigint,minor:bigint>` result, a sql candidate", "job.py", "version_parts", [["1.2.3"], ["10.0"], ["v1.2"], [None]]),
    Shape(
        "struct_return_vectorized",
        "7: the same struct result, a vectorized candidate",
        "job.py",
        "version_parts",
        [["1.2.3"], ["10.0"], ["v1.2"], [None]],
        folder="struct_return",
        candidate="candidate_vectorized.py",
    ),
    Shape("map_return", "7: a `MapType(StringType(), LongType())` result", "job.py", "word_counts", [["the cat the"], [""], ["A a"], [None]]),
    Shape("nested_nulls", "8: nulls and NaN inside an `array<double>` argument", "job.py", "missing_readings", [[[1.0, None, "NaN"]], [[]], [None]], {"readings": "array<double>"}),
    Shape("pandas_iterator", "10: an iterator pandas UDF (`Iterator[pd.Series]`), set up once per partition", "job.py", "to_eur", [["usd"], ["EUR"], ["xyz"], [None]], {"currency": "string"}),
    Shape(
        "pandas_iterator_tuple",
        "10: `PandasUDFType.SCALAR_ITER` over `Iterator[Tuple[pd.Series, pd.Series]]`",
        "job.py",
        "weighted",
        [[2.0, 3.0], [2.0, None], [2.0, "NaN"], [None, 1.0]],
        {"value": "double", "weight": "double"},
    ),
    Shape("pandas_aggregate", "10: a Series-to-scalar pandas UDF in groupBy().agg(), a sql candidate", "job.py", "spread", [[[1.0, 5.0, None]], [[2.0]], [["NaN", 3.0]], [[None]]], {"values": "double"}),
    Shape(
        "pandas_aggregate_vectorized",
        "10: the same aggregation, a vectorized candidate",
        "job.py",
        "spread",
        [[[1.0, 5.0, None]], [[2.0]], [["NaN", 3.0]], [[None]]],
        {"values": "double"},
        folder="pandas_aggregate",
        candidate="candidate_vectorized.py",
    ),
    Shape("apply_in_pandas", "10: a function given to applyInPandas", "job.py", "normalise", [], refused=r"'normalise' is a function of whole frames, given to applyInPandas\(\) at line 10"),
]


@dataclass
class Outcome:
    """How far a shape got, step by step: each step's result in a line, and the objects for tests to look into."""

    shape: Shape
    steps: dict[str, str] = field(default_factory=dict)
    created: Any = None  # init_workspace's result
    recorded: Any = None
    tested: Any = None
    compared: Any = None
    refusal: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def compared_rows(self) -> int:
        return self.compared.evidence.hidden_rows_compared if self.compared is not None else 0

    @property
    def rows_with_a_value(self) -> int:
        return self.compared.evidence.hidden_rows_with_a_value if self.compared is not None else 0


def apply_step(shape: Shape, root_folder: Path, workspace: str) -> str:
    """The job converted as apply_conversion converts it: 'ok: ...', 'refused: ...' (a refusal that says why) or 'broken: ...'."""
    import ast

    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp import extraction
    from aether_mcp.extraction.local_modules import LocalModules
    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.tools.job_conversion import convert_source, no_udf_left
    from aether_mcp.workspace import Workspace
    from aether_mcp.workspace.candidates import declared_target

    udf = Workspace.open(SandboxRoot(root_folder), workspace).config.udf
    kind = declared_target((shape.path / shape.candidate).read_text(), shape.name)
    job_text = (root_folder / udf.source).read_text()
    try:
        converted, replaced, _ = convert_source(job_text, udf, kind, f"{udf.name}_aether")
    except ToolError as exc:
        return f"refused: {exc}"
    left = no_udf_left(converted, udf)
    if left != "pass":
        return f"broken: a Python UDF is left ({left})"
    reader = LocalModules(root_folder).tree_reader(root_folder / udf.source)
    definition = extraction.select_udf(extraction.find_udfs(ast.parse(job_text), reader), shape.udf, udf.source)
    names = {udf.name, udf.function, *definition.aliases}
    called = {n.func.id for n in ast.walk(ast.parse(job_text)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)} & names
    tree = ast.parse(converted)
    bound = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    bound |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    bound |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    if called - bound:
        return f"broken: the job calls it as {', '.join(sorted(called - bound))}, which the converted job no longer binds"
    return f"ok: {kind}, lines {replaced[0]}-{replaced[1]} of {udf.source} replaced"


def run_shape(shape: Shape, folder: Path, workers, hidden_rows: int = 1200) -> Outcome:
    """Copy the shape into `folder` (the server root) and take it through init_workspace, record_cases, run_tests and byte_compare."""
    from mcp.server.mcpserver.exceptions import ToolError

    from aether_mcp.path_guard import SandboxRoot
    from aether_mcp.tools import case_recording, files, workspaces
    from aether_mcp.tools.byte_compare import byte_compare
    from aether_mcp.tools.suite_runs import run_tests

    shutil.copytree(shape.path, folder / shape.name, ignore=shutil.ignore_patterns("candidate*.py", "__pycache__"))
    root = SandboxRoot(folder)
    outcome = Outcome(shape)

    def step(name: str, call):
        started = time.monotonic()
        try:
            return call()
        finally:
            outcome.seconds[name] = round(time.monotonic() - started, 1)

    try:
        outcome.created = step("init_workspace", lambda: workspaces.init_workspace(root, f"{shape.name}/{shape.source}", shape.udf, arg_types=shape.arg_types, backend="cpu"))
    except ToolError as exc:
        outcome.refusal = str(exc)
        outcome.steps["init_workspace"] = f"refused: {exc}"
        return outcome
    ws = outcome.created.workspace
    outcome.steps["init_workspace"] = f"ok: {outcome.created.udf.form}, {len(outcome.created.notes)} note(s)"
    outcome.recorded = step("record_cases", lambda: case_recording.record_cases(root, workers, ws, shape.inputs, why=f"the {shape.name} shape"))
    raised = sum(1 for case in outcome.recorded.recorded if case.raises)
    outcome.steps["record_cases"] = f"ok: {len(outcome.recorded.recorded)} cases ({raised} raise)"
    outcome.tested = step("run_tests", lambda: run_tests(root, workers, ws, "original"))
    tested = outcome.tested
    outcome.steps["run_tests"] = f"{'ok' if tested.failed == tested.errors == 0 and tested.passed else 'failed'}: {tested.passed} passed, {tested.failed} failed, {tested.errors} errors"
    files.write_file(root, ws, f"candidate/{shape.name}.py", (shape.path / shape.candidate).read_text())
    outcome.compared = step("byte_compare", lambda: byte_compare(root, workers, ws, shape.name, hidden_rows=hidden_rows))
    compared = outcome.compared
    verdict = {True: "equal", False: "not equal", None: "no verdict"}[compared.equal]
    outcome.steps["byte_compare"] = f"{verdict} on {outcome.compared_rows} hidden rows ({outcome.rows_with_a_value} with a value)" + (f": {compared.mismatches[0]}" if compared.mismatches else "")
    outcome.steps["apply"] = step("apply", lambda: apply_step(shape, folder, ws))
    return outcome
