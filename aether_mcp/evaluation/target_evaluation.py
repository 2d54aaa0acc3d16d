"""Evaluate a target (the original UDF or a candidate) on argument rows through a real SparkSession.

Runs inside a Spark worker. Rows become a DataFrame with the declared argument types (plus a
row id) and the target is applied the way it will run for real: the original as the job defines
it (a Python UDF with the job's transport, or a pandas UDF), a `sql` candidate through
`build(*cols)` (steps applied as successive projections), a `vectorized`/`kernel` candidate
through `mapInArrow` with its source shipped by value (the worker never executes it). Outputs
come back in row order as Python values; a row on which the target raised gets a `Raised`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pandas as pd
import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from aether_mcp.candidates import BadCandidate, declared_target, defines_function
from aether_mcp.confined import arrow_batches
from aether_mcp.reference import input_capture
from aether_mcp.confined.arrow_batches import ERROR, OUTPUT, ROW_ID
from aether_mcp.wire.value_codec import Raised
from aether_mcp.spark_types import parse_type
from aether_mcp.workspace import CANDIDATE_DIR, ORIGINAL_MODULE, WorkspaceConfig

PYTHON_EVAL_NODES = ("BatchEvalPython", "ArrowEvalPython")
DEFAULT_MAX_ISOLATED = 32
ARROW_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"


class TargetError(Exception):
    """The target cannot be evaluated at all (import error, bad contract, plan that does not analyse).

    `in_driver`: candidate code failed while running in the worker's own process (a sql
    candidate's import or build), which may have left state behind there.
    """

    def __init__(self, message: str, in_driver: bool = False) -> None:
        super().__init__(message)
        self.in_driver = in_driver


class BadRows(Exception):
    """The argument rows do not fit the UDF's declared argument types."""


@dataclass
class Shape:
    """How rows are laid out for one evaluation: partitions, empty partitions, Arrow batch size."""

    partitions: int | None = None
    empty_partitions: int = 0
    max_records_per_batch: int | None = None

    @classmethod
    def from_request(cls, data: dict[str, Any] | None) -> Shape:
        data = data or {}
        return cls(
            partitions=_bounded(data.get("partitions"), 1, 256),
            empty_partitions=_bounded(data.get("empty_partitions"), 0, 16) or 0,
            max_records_per_batch=_bounded(data.get("max_records_per_batch"), 1, 1_000_000),
        )


@dataclass
class LoadedTarget:
    label: str
    target_kind: str  # "row", "pandas", "sql", "vectorized", "kernel"
    apply: Callable[[DataFrame, list[Column]], DataFrame]
    source_digest: str
    probe: Callable[[DataFrame, list[Column]], DataFrame] | None = field(default=None)
    output: tuple[str, bool] | None = field(default=None)  # (type, nullable), once analysed
    conf_changes: list[str] = field(default_factory=list)  # Spark confs a sql build changed (restored since)
    built: Any = None  # a sql candidate's build(*cols) result: a Column or (name, Column) steps


def load_target(workspace: Path, config: WorkspaceConfig, target: str, fresh: bool = False) -> LoadedTarget:
    """Prepare the original or a candidate of the workspace for evaluation (`fresh`: import it anew)."""
    return_type = parse_type(config.udf.return_type)
    if target == "original":
        return _load_original(workspace, config, return_type)
    name = target.removeprefix("candidate:")
    path = workspace / CANDIDATE_DIR / f"{name}.py"
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetError(f"candidate/{name}.py cannot be read ({exc})") from exc
    digest = hashlib.sha256(source.encode()).hexdigest()
    try:
        kind = declared_target(source, name)
    except BadCandidate as exc:
        raise TargetError(str(exc)) from None
    if kind == "sql":
        module = _import_candidate(path, name, fresh)
        build = getattr(module, "build", None)
        if not callable(build):
            raise TargetError(f"candidate/{name}.py has TARGET = 'sql' but no build(*cols) function")
        confs = _spark_confs()
        try:
            built = build(*_argument_columns(config))
        except Exception as exc:  # the candidate's own code failed
            raise TargetError(f"{target}: build(*cols) raised {exc.__class__.__name__}: {_first_line(exc)}", in_driver=True) from exc
        finally:
            changed = _restore_confs(confs)  # a build must not change the session other runs share
        # Columns refer to the arguments by name, so one build serves every frame.
        return LoadedTarget(target, "sql", lambda frame, cols: _apply_build(frame, built, target), digest, conf_changes=changed, built=built)
    if not defines_function(source, "evaluate"):
        raise TargetError(f"candidate/{name}.py has TARGET = {kind!r} but no evaluate(*series) function")
    mapper = arrow_batches.make_mapper(source, digest, str(path), "evaluate", to_arrow_type(return_type))
    schema = T.StructType(
        [T.StructField(ROW_ID, T.LongType(), False), T.StructField(OUTPUT, return_type, True), T.StructField(ERROR, T.StringType(), True)]
    )
    return LoadedTarget(target, kind, lambda frame, cols: frame.select(F.col(ROW_ID), *cols).mapInArrow(mapper, schema), digest)


def evaluate_rows(
    spark: SparkSession,
    config: WorkspaceConfig,
    loaded: LoadedTarget,
    rows: list[list[Any]],
    shape: Shape | None = None,
    max_isolated: int = DEFAULT_MAX_ISOLATED,
    typed: bool = False,
) -> tuple[list[Any], str, bool]:
    """Outputs of `loaded` on `rows` in row order (a `Raised` where it raised), the output type and nullability.

    `typed` rows were generated for the declared types and skip the per-value checks.
    """
    schema = argument_schema(config)
    coerce = _RowCoercer(schema, verify=not typed)
    prepared = [coerce(index, row) for index, row in enumerate(rows)]
    if loaded.output is None:
        loaded.output = _output_field(spark, config, loaded, schema)
    output_type, nullable = loaded.output
    run = _Evaluation(spark, config, loaded, schema, prepared, shape or Shape(), max_isolated)
    run.evaluate_all()
    return run.outputs, output_type, nullable


def capture_inputs(spark: SparkSession, config: WorkspaceConfig, rows: list[list[Any]]) -> list[Any]:
    """The original's arguments for each row exactly as Spark delivers them (encoded, in row order).

    Same UDF kind and transport as the original, so the values are the ones it receives.
    """
    schema = argument_schema(config)
    coerce = _RowCoercer(schema)
    prepared = [coerce(index, row) for index, row in enumerate(rows)]
    if config.udf.kind == "pandas":
        capture = F.pandas_udf(_series_function(input_capture.capture_series), T.StringType())
    else:
        capture = F.udf(input_capture.capture_row, T.StringType(), useArrow=config.udf.use_arrow)
    frame = _arrow_frame(spark, schema, prepared) or spark.createDataFrame(prepared, schema, verifySchema=False)
    collected = frame.select(ROW_ID, capture(*_argument_columns(config)).alias(OUTPUT)).collect()
    captured: list[Any] = [None] * len(prepared)
    for row in collected:
        captured[row[ROW_ID]] = row[OUTPUT]
    return captured


TINY_BATCH_ROWS = 200  # rows run again one per batch, to catch results that depend on the batch
PYTHON_PLAN_NODES = (
    "BatchEvalPython", "ArrowEvalPython", "MapInPandas", "MapInArrow", "PythonMapInArrow", "FlatMapGroupsInPandas",
    "FlatMapCoGroupsInPandas", "AggregateInPandas", "WindowInPandas", "PythonUDTF", "EvalPythonUDTF", "PythonUDF",
)

# Expressions that call arbitrary JVM methods or read files, as they print in an executed plan.
JVM_PLAN_CALLS = re.compile(r"\b(?:try_reflect|reflect|java_method|input_file_name|input_file_block_start|read_files)\(", re.IGNORECASE)


def audit_target(spark: SparkSession, workspace: Path, config: WorkspaceConfig, target: str, small: list[list[Any]], large: list[list[Any]]) -> dict[str, Any]:
    """Run a candidate under watch: what it does while it loads and runs, and what the plan holds.

    sql: the build runs watched in this process and the executed plan is searched for Python
    nodes. vectorized/kernel: the candidate runs watched in Spark's Python workers on `small`
    rows and `large` rows in one batch each, and on `small` rows in one-row batches.
    """
    from aether_mcp.confined import watch as candidate_audit

    name = target.removeprefix("candidate:")
    path = workspace / CANDIDATE_DIR / f"{name}.py"
    source = path.read_text(encoding="utf-8")
    try:
        kind = declared_target(source, name)
    except BadCandidate as exc:
        raise TargetError(str(exc)) from None
    schema = argument_schema(config)
    if kind == "sql":
        candidate_audit.install(str(workspace))
        with candidate_audit.Watch(str(path)) as watch:
            loaded = load_target(workspace, config, target, fresh=True)
        frame = loaded.apply(spark.createDataFrame([], schema), _argument_columns(config))
        plan = frame._jdf.queryExecution().executedPlan().toString()
        return {
            "kind": kind,
            "events": watch.events,
            "plan_python_nodes": [node for node in PYTHON_PLAN_NODES if node in plan],
            "plan_jvm_calls": sorted(set(JVM_PLAN_CALLS.findall(plan))),
            "conf_changes": loaded.conf_changes,
            "threads_left": watch.threads_left,
            "children_left": watch.children_left,
        }
    if not defines_function(source, "evaluate"):
        raise TargetError(f"candidate/{name}.py has TARGET = {kind!r} but no evaluate(*series) function")
    return_type = parse_type(config.udf.return_type)
    digest = hashlib.sha256(source.encode()).hexdigest()
    mapper = arrow_batches.make_mapper(source, digest, str(path), "evaluate", to_arrow_type(return_type), audit_workspace=str(workspace))
    out_schema = T.StructType(
        [
            T.StructField(ROW_ID, T.LongType(), False),
            T.StructField(OUTPUT, return_type, True),
            T.StructField(ERROR, T.StringType(), True),
            T.StructField(arrow_batches.AUDIT, T.StringType(), True),
        ]
    )
    runs = {}
    tiny = small[:TINY_BATCH_ROWS]
    for label, rows, batch_rows in (("small", small, len(small) + 1), ("large", large, len(large) + 1), ("tiny", tiny, 1)):
        coerce = _RowCoercer(schema, verify=False)
        prepared = [coerce(index, row) for index, row in enumerate(rows)]
        frame = (_arrow_frame(spark, schema, prepared) or spark.createDataFrame(prepared, schema, verifySchema=False)).coalesce(1)
        previous = spark.conf.get(ARROW_BATCH_CONF)
        spark.conf.set(ARROW_BATCH_CONF, str(batch_rows))
        try:
            collected = frame.select(F.col(ROW_ID), *_argument_columns(config)).mapInArrow(mapper, out_schema).collect()
        except Exception as exc:
            if _is_import_failure(exc):
                raise TargetError(f"{target} failed to load: {_import_failure_message(exc)}") from None
            raise
        finally:
            spark.conf.set(ARROW_BATCH_CONF, previous)
        outputs: list[Any] = [None] * len(prepared)
        reports = []
        for row in collected:
            error = row[ERROR]
            outputs[row[ROW_ID]] = row[OUTPUT] if error is None else Raised(*(error.partition(": ")[::2]))
            if row[arrow_batches.AUDIT]:
                reports.append(json.loads(row[arrow_batches.AUDIT]))
        runs[label] = {"outputs": outputs, "reports": reports}
    reports = [r for run in runs.values() for r in run["reports"]]
    return {
        "kind": kind,
        "events": sorted({event for r in reports for event in r["events"]}),
        "calls_small": sum(r["calls"] for r in runs["small"]["reports"]),
        "calls_large": sum(r["calls"] for r in runs["large"]["reports"]),
        "rows_small": sum(r["rows"] for r in runs["small"]["reports"]),
        "rows_large": sum(r["rows"] for r in runs["large"]["reports"]),
        "inputs_changed": any(r["inputs_changed"] for r in reports),
        "threads_left": max([r["threads_left"] for r in reports] or [0]),
        "children_left": max([r["children_left"] for r in reports] or [0]),
        "outputs_one_batch": runs["small"]["outputs"][: len(tiny)],
        "outputs_tiny_batches": runs["tiny"]["outputs"],
    }


def argument_schema(config: WorkspaceConfig) -> T.StructType:
    fields = [T.StructField(ROW_ID, T.LongType(), False)]
    fields += [T.StructField(arg.name, parse_type(arg.type), True) for arg in config.udf.args]
    return T.StructType(fields)


class _Evaluation:
    def __init__(self, spark, config, loaded, schema, prepared, shape, max_isolated) -> None:
        self.spark = spark
        self.config = config
        self.loaded = loaded
        self.schema = schema
        self.prepared = prepared
        self.shape = shape
        self.isolation_budget = max_isolated
        self.outputs: list[Any] = [None] * len(prepared)

    def evaluate_all(self) -> None:
        indices = list(range(len(self.prepared)))
        if not indices:
            return
        try:
            self._collect(indices)
            return
        except Exception as exc:  # the target failed somewhere in the batch
            first_failure = exc
        if self.loaded.probe is not None:
            indices = self._probe_raising_rows(indices)
            try:
                self._collect(indices)
                return
            except Exception as exc:
                first_failure = exc
        self._isolate(indices, first_failure)

    def _collect(self, indices: list[int]) -> None:
        if not indices:
            return
        frame = self._frame(indices)
        conf = self.spark.conf
        previous = conf.get(ARROW_BATCH_CONF) if self.shape.max_records_per_batch else None
        if self.shape.max_records_per_batch:
            conf.set(ARROW_BATCH_CONF, str(self.shape.max_records_per_batch))
        try:
            collected = self.loaded.apply(frame, _argument_columns(self.config)).collect()
        finally:
            if previous is not None:
                conf.set(ARROW_BATCH_CONF, previous)
        has_errors = bool(collected) and ERROR in collected[0].__fields__
        for row in collected:
            error = row[ERROR] if has_errors else None
            if error is None:
                self.outputs[row[ROW_ID]] = row[OUTPUT]
            else:
                exc_type, _, message = error.partition(": ")
                self.outputs[row[ROW_ID]] = Raised(exc_type, message)

    def _frame(self, indices: list[int]) -> DataFrame:
        rows = [self.prepared[i] for i in indices]
        frame = _arrow_frame(self.spark, self.schema, rows)
        if frame is None:
            frame = self.spark.createDataFrame(rows, self.schema, verifySchema=False)
        if self.shape.partitions is not None:
            frame = frame.repartition(min(self.shape.partitions, max(1, len(rows))))
        if self.shape.empty_partitions:
            empty = self.spark.sparkContext.parallelize([], self.shape.empty_partitions)
            frame = frame.union(self.spark.createDataFrame(empty, self.schema))
        return frame

    def _probe_raising_rows(self, indices: list[int]) -> list[int]:
        """Find the rows the original raises on in one job; returns the rows that did not raise."""
        assert self.loaded.probe is not None
        try:
            probed = self.loaded.probe(self._frame(indices), _argument_columns(self.config)).collect()
        except Exception:
            return indices
        clean = []
        errors = {row[ROW_ID]: row[OUTPUT] for row in probed}
        for index in indices:
            error = errors.get(index)
            if error is None:
                clean.append(index)
            else:
                exc_type, _, message = error.partition(": ")
                self.outputs[index] = Raised(exc_type, message)
        return clean

    def _isolate(self, indices: list[int], failure: BaseException) -> None:
        """Split a failing batch until each failure is one row, within the isolation budget."""
        if _is_import_failure(failure):
            raise TargetError(f"{self.loaded.label} failed to load: {_import_failure_message(failure)}")
        if len(indices) == 1:
            self.outputs[indices[0]] = raised_from(failure)
            self.isolation_budget -= 1
            return
        if self.isolation_budget <= 0:
            unresolved = Raised("BatchFailed", f"a batch holding this row failed and was not split further: {_first_line(failure)}")
            for index in indices:
                self.outputs[index] = unresolved
            return
        middle = len(indices) // 2
        for half in (indices[:middle], indices[middle:]):
            try:
                self._collect(half)
            except Exception as exc:
                self._isolate(half, exc)


def _arrow_frame(spark: SparkSession, schema: T.StructType, rows: list[tuple]) -> DataFrame | None:
    """The rows as a DataFrame built from Arrow (fast), or None where only the row path is exact.

    Timestamps stay on the row path: there PySpark reads a naive datetime as local time, which
    Arrow would not. Values Arrow refuses (a decimal with more scale than its column) do too.
    """
    if any("timestamp" in f.dataType.simpleString() for f in schema.fields):
        return None
    try:
        columns = [pa.array([row[i] for row in rows], type=to_arrow_type(f.dataType), from_pandas=False) for i, f in enumerate(schema.fields)]
        table = pa.Table.from_arrays(columns, names=[f.name for f in schema.fields])
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    return spark.createDataFrame(table, schema)


def _load_original(workspace: Path, config: WorkspaceConfig, return_type: T.DataType) -> LoadedTarget:
    try:
        module = _load_module(workspace / ORIGINAL_MODULE, "aether_original")
    except Exception as exc:
        raise TargetError(f"original/udf.py failed to import: {exc.__class__.__name__}: {exc}") from exc
    function = getattr(module, config.udf.function, None)
    if not callable(function):
        raise TargetError(f"original/udf.py does not define {config.udf.function}()")
    digest = _digest(workspace / ORIGINAL_MODULE)
    if config.udf.kind == "pandas":
        pandas_udf = F.pandas_udf(_series_function(function), return_type)
        return LoadedTarget("original", "pandas", lambda frame, cols: frame.select(ROW_ID, pandas_udf(*cols).alias(OUTPUT)), digest)
    row_udf = F.udf(function, return_type, useArrow=config.udf.use_arrow)
    # Same transport as the UDF itself, so the probe sees exactly the values the UDF sees.
    probe_udf = F.udf(_raising_probe(function), T.StringType(), useArrow=config.udf.use_arrow)
    return LoadedTarget(
        "original",
        "row",
        lambda frame, cols: frame.select(ROW_ID, row_udf(*cols).alias(OUTPUT)),
        digest,
        probe=lambda frame, cols: frame.select(ROW_ID, probe_udf(*cols).alias(OUTPUT)),
    )


def _raising_probe(function: Callable[..., Any]) -> Callable[..., str | None]:
    def probe(*args: Any) -> str | None:
        try:
            function(*args)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    return probe


def plan_target(spark: SparkSession, loaded: LoadedTarget, data: str) -> dict[str, Any]:
    """The plan profile of a sql candidate over the Parquet file `data`, wired as a job wires it."""
    from aether_mcp.confined.plan_profile import profile_plan

    frame = spark.read.parquet(data)
    keep = [F.col(f"`{c}`") for c in frame.columns]
    return profile_plan(_apply_build(frame, loaded.built, loaded.label, keep=keep))


def _apply_build(frame: DataFrame, built: Any, label: str, keep: list[Column | str] | None = None) -> DataFrame:
    """`frame` with the columns in `keep` (default: the row id) and the build's result as OUTPUT."""
    keep = [ROW_ID] if keep is None else keep
    if isinstance(built, Column):
        return frame.select(*keep, built.alias(OUTPUT))
    if isinstance(built, (list, tuple)) and built and all(_is_step(step) for step in built):
        for step_name, step_column in built:
            frame = frame.withColumn(step_name, step_column)
        return frame.select(*keep, F.col(f"`{built[-1][0]}`").alias(OUTPUT))
    raise TargetError(f"{label}: build(*cols) must return a Column or a non-empty list of (name, Column) steps, not {type(built).__name__}")


def _output_field(spark: SparkSession, config: WorkspaceConfig, loaded: LoadedTarget, schema: T.StructType) -> tuple[str, bool]:
    """Analyse the plan once on an empty frame: contract errors surface here, before any job runs."""
    empty = spark.createDataFrame([], schema)
    try:
        frame = loaded.apply(empty, _argument_columns(config))
        output = frame.schema[OUTPUT]
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(f"{loaded.label} cannot be applied to the argument columns: {_first_line(exc)}") from exc
    if loaded.target_kind == "sql":
        plan = frame._jdf.queryExecution().executedPlan().toString()
        found = [node for node in PYTHON_EVAL_NODES if node in plan]
        if found:
            raise TargetError(
                f"{loaded.label} is a 'sql' candidate but its plan still evaluates Python ({', '.join(found)}); "
                "a sql candidate may use only Spark SQL functions"
            )
    return output.dataType.simpleString(), output.nullable


def _argument_columns(config: WorkspaceConfig) -> list[Column]:
    return [F.col(f"`{arg.name}`") for arg in config.udf.args]


def _spark_confs() -> dict[str, str]:
    spark = SparkSession.getActiveSession()
    return dict(spark.conf.getAll) if spark is not None else {}


def _restore_confs(before: dict[str, str]) -> list[str]:
    """Put the session's runtime confs back as they were; the names of those that had changed."""
    spark = SparkSession.getActiveSession()
    if spark is None:
        return []
    after = dict(spark.conf.getAll)
    changed = sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))
    for key in changed:
        if key in before:
            spark.conf.set(key, before[key])
        else:
            spark.conf.unset(key)
    return changed


def _import_candidate(path: Path, name: str, fresh: bool = False) -> ModuleType:
    try:
        return _load_module(path, f"aether_candidate_{name}" + (f"_audit{len(sys.modules)}" if fresh else ""))
    except Exception as exc:  # the candidate is untrusted code: any failure is its own
        raise TargetError(f"candidate/{name}.py failed to import: {exc.__class__.__name__}: {exc}", in_driver=True) from exc


def _is_step(step: Any) -> bool:
    return isinstance(step, (list, tuple)) and len(step) == 2 and isinstance(step[0], str) and isinstance(step[1], Column)


def _is_import_failure(exc: BaseException) -> bool:
    return arrow_batches.IMPORT_FAILURE in str(exc)


def _import_failure_message(exc: BaseException) -> str:
    text = str(exc)
    start = text.index(arrow_batches.IMPORT_FAILURE) + len(arrow_batches.IMPORT_FAILURE) + 2
    return text[start:].splitlines()[0]


def raised_from(exc: BaseException) -> Raised:
    """The Python exception a target raised (from the worker traceback) or the Spark error class."""
    text = str(exc)
    python_lines = [line for line in text.splitlines() if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)?(: |$)", line)]
    if "Traceback (most recent call last)" in text and python_lines:
        exc_type, _, message = python_lines[-1].partition(": ")
        return Raised(exc_type.rsplit(".", 1)[-1], message.strip())
    error_class = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    condition = error_class() if callable(error_class) else None
    return Raised(condition or type(exc).__name__, _first_line(exc))


class _RowCoercer:
    """Checks rows against the argument types (one verifier per column) and applies lossless conveniences."""

    def __init__(self, schema: T.StructType, verify: bool = True) -> None:
        self.fields = schema.fields[1:]
        self.verifiers = [T._make_type_verifier(f.dataType, nullable=True, name=f.name) if verify else _accept for f in self.fields]

    def __call__(self, index: int, row: Any) -> tuple:
        fields = self.fields
        if not isinstance(row, (list, tuple)):
            raise BadRows(f"row {index} is {type(row).__name__} {row!r}; each row must be a list of {len(fields)} argument values")
        if len(row) != len(fields):
            names = ", ".join(f.name for f in fields)
            raise BadRows(f"row {index} has {len(row)} values but the UDF takes {len(fields)} ({names})")
        values: list[Any] = [index]
        for value, spark_field, verify in zip(row, fields, self.verifiers):
            value = _convenience(index, value, spark_field)
            try:
                verify(value)
            except (TypeError, ValueError) as exc:
                raise BadRows(f"row {index}, argument {spark_field.name!r} ({spark_field.dataType.simpleString()}): {_first_line(exc)}") from exc
            values.append(value)
        return tuple(values)


def _accept(value: Any) -> None:
    return None


def _convenience(index: int, value: Any, spark_field: T.StructField) -> Any:
    data_type = spark_field.dataType
    # Lossless conveniences only: 3 for a double column is 3.0, "1.50" for a decimal is Decimal("1.50").
    if isinstance(value, int) and not isinstance(value, bool) and isinstance(data_type, (T.DoubleType, T.FloatType)):
        return float(value)
    if isinstance(value, (int, str)) and not isinstance(value, bool) and isinstance(data_type, T.DecimalType):
        try:
            return Decimal(value)
        except ArithmeticError as exc:
            raise BadRows(f"row {index}, argument {spark_field.name!r}: {value!r} is not a decimal") from exc
    return value


def _series_function(function: Callable[..., Any]) -> Callable[..., pd.Series]:
    def evaluate(*series: pd.Series) -> pd.Series:
        return function(*series)

    return evaluate


def _load_module(path: Path, prefix: str) -> ModuleType:
    """Import a file under a name unique to its content; Spark ships its functions by value."""
    digest = _digest(path)
    name = f"{prefix}_{digest[:16]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    cloudpickle.register_pickle_by_value(module)
    return module


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise TargetError(f"{path.name} cannot be read ({exc.strerror})") from exc


def _bounded(value: Any, low: int, high: int) -> int | None:
    if value is None:
        return None
    return max(low, min(high, int(value)))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__
