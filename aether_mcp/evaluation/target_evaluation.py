"""Evaluate a prepared target on argument rows through a real SparkSession: shared by both workers.

Rows become a DataFrame with the declared argument types (plus a row id) and the target is
applied the way it will run for real; how each target is prepared lives on its own side of the
boundary (aether_mcp.reference.original for the original, aether_mcp.confined.candidate_targets
for candidates). Outputs come back in row order as Python values; a row on which the target
raised gets a `Raised`; watch events a vectorized candidate's batches carried come back too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from aether_mcp.confined import arrow_batches
from aether_mcp.confined.arrow_batches import ERROR, EVENTS, OUTPUT, ROW_ID
from aether_mcp.evaluation.pandas_forms import EMPTY_GROUP_MESSAGE, EMPTY_GROUP_TYPE
from aether_mcp.evaluation.spark_errors import explain
from aether_mcp.spark_types import parse_type
from aether_mcp.wire.value_codec import Raised
from aether_mcp.workspace import WorkspaceConfig

PYTHON_EVAL_NODES = ("BatchEvalPython", "ArrowEvalPython")
DEFAULT_MAX_ISOLATED = 32
# Set by the worker: whether the request this thread serves was cancelled. A batch that failed then is
# not retried or split (its Spark job was stopped, not the target), so the request ends at once.
def _never_cancelled() -> bool:
    return False


request_cancelled: Callable[[], bool] = _never_cancelled
SQL_ERRORS_SHOWN = 3  # rows a sql probe found failing that run alone, for the error Spark gives
ARROW_BATCH_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"


class TargetError(Exception):
    """The target cannot be evaluated at all (import error, bad contract, plan that does not analyse).

    `events`: what the watch saw while the candidate loaded in its own process (a sql build's).
    """

    def __init__(self, message: str, events: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.events = list(events or [])


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
    events: list[dict[str, Any]] = field(default_factory=list)  # what the watch saw while a sql build ran (its own process)
    built: Any = None  # a sql candidate's build(*cols) result: a Column or (name, Column) steps


def evaluate_rows(
    spark: SparkSession,
    config: WorkspaceConfig,
    loaded: LoadedTarget,
    rows: list[list[Any]],
    shape: Shape | None = None,
    max_isolated: int = DEFAULT_MAX_ISOLATED,
    typed: bool = False,
    events: list[dict[str, Any]] | None = None,
) -> tuple[list[Any], str, bool]:
    """Outputs of `loaded` on `rows` in row order (a `Raised` where it raised), the output type and nullability.

    `typed` rows were generated for the declared types and skip the per-value checks. Watch
    events carried back by the batches are appended to `events`.
    """
    schema = argument_schema(config)
    coerce = RowCoercer(schema, verify=not typed)
    prepared = [coerce(index, row) for index, row in enumerate(rows)]
    if loaded.output is None:
        loaded.output = _output_field(spark, config, loaded, schema)
    output_type, nullable = loaded.output
    run = _Evaluation(spark, config, loaded, schema, prepared, shape or Shape(), max_isolated)
    run.evaluate_all()
    if events is not None:
        events += run.events
    return run.outputs, output_type, nullable


GROUP_ITEM = "__aether_item"
EMPTY_GROUP = Raised(EMPTY_GROUP_TYPE, EMPTY_GROUP_MESSAGE)


def is_grouped(config: WorkspaceConfig) -> bool:
    """Whether the UDF is an aggregation: each row then holds one group, each argument that group's values."""
    return config.udf.pandas_form == "aggregate"


def group_rows(frame: DataFrame, config: WorkspaceConfig, ordered: bool = True) -> DataFrame:
    """One row per value of each group, the argument columns named as before, for groupBy(ROW_ID).

    A row's argument arrays are zipped as arrays_zip zips them (a shorter one padded with nulls);
    a null or empty array makes no group. `ordered`: one partition, in array order, so every run
    hands an aggregation its group's values in the same order (a benchmark keeps the partitions).
    """
    names = [arg.name for arg in config.udf.args]
    items = frame.select(ROW_ID, F.explode(F.arrays_zip(*[F.col(f"`{name}`") for name in names])).alias(GROUP_ITEM))
    values = items.select(ROW_ID, *[F.col(GROUP_ITEM)[name].alias(name) for name in names])
    return values.coalesce(1) if ordered else values


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
        self.events: list[dict[str, Any]] = []

    def evaluate_all(self) -> None:
        indices = list(range(len(self.prepared)))
        if not indices:
            return
        try:
            self._collect(indices)
            return
        except Exception as exc:  # the target failed somewhere in the batch
            if request_cancelled():
                raise
            first_failure = exc
        if self.loaded.probe is not None:
            indices = self._probe_raising_rows(indices)
            try:
                self._collect(indices)
                return
            except Exception as exc:
                if request_cancelled():
                    raise
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
            collected = self.loaded.apply(frame, argument_columns(self.config)).collect()
        finally:
            if previous is not None:
                conf.set(ARROW_BATCH_CONF, previous)
        if is_grouped(self.config):
            returned = {row[ROW_ID] for row in collected}
            for index in indices:
                if index not in returned:
                    self.outputs[index] = EMPTY_GROUP
        has_errors = bool(collected) and ERROR in collected[0].__fields__
        has_events = bool(collected) and EVENTS in collected[0].__fields__
        for row in collected:
            if has_events and row[EVENTS]:
                self.events += json.loads(row[EVENTS])
            error = row[ERROR] if has_errors else None
            if error is None:
                self.outputs[row[ROW_ID]] = row[OUTPUT]
            else:
                exc_type, _, message = error.partition(": ")
                self.outputs[row[ROW_ID]] = Raised(exc_type, message)

    def _frame(self, indices: list[int]) -> DataFrame:
        rows = [self.prepared[i] for i in indices]
        frame = arrow_frame(self.spark, self.schema, rows)
        if frame is None:
            frame = self.spark.createDataFrame(rows, self.schema, verifySchema=False)
        if self.shape.partitions is not None:
            frame = frame.repartition(min(self.shape.partitions, max(1, len(rows))))
        if self.shape.empty_partitions:
            frame = frame.union(empty_partitions(self.spark, self.schema, self.shape.empty_partitions))
        return frame

    def _probe_raising_rows(self, indices: list[int]) -> list[int]:
        """Find the rows the target raises on in one job; returns the rows that did not raise."""
        assert self.loaded.probe is not None
        try:
            probed = self.loaded.probe(self._frame(indices), argument_columns(self.config)).collect()
        except Exception:
            return indices
        clean, raising = [], []
        errors = {row[ROW_ID]: row[OUTPUT] for row in probed}
        for index in indices:
            error = errors.get(index)
            if error is None:
                clean.append(index)
            else:
                exc_type, _, message = error.partition(": ")
                self.outputs[index] = Raised(exc_type, message)
                raising.append(index)
        if self.loaded.target_kind == "sql":
            # The probe knows that a row failed, not how: run a few alone for the real error.
            alone = []
            for index in raising[:SQL_ERRORS_SHOWN]:
                try:
                    self._collect([index])
                except Exception as exc:
                    self.outputs[index] = raised_from(exc)
                    alone.append(self.outputs[index])
            if alone:  # the others say what the first row run alone raised, so every row shows a cause
                seen = f"; a row run alone raised {alone[0].type}: {alone[0].message}"
                for index in raising[SQL_ERRORS_SHOWN:]:
                    self.outputs[index] = Raised(SQL_RAISED, SQL_RAISED_NOTE + seen)
        return clean

    def _isolate(self, indices: list[int], failure: BaseException) -> None:
        """Split a failing batch until each failure is one row, within the isolation budget."""
        if is_import_failure(failure):
            raise TargetError(f"{self.loaded.label} failed to load: {import_failure_message(failure)}")
        if len(indices) == 1:
            self.outputs[indices[0]] = raised_from(failure)
            self.isolation_budget -= 1
            return
        if self.isolation_budget <= 0:
            unresolved = Raised("BatchFailed", f"a batch holding this row failed and was not split further: {explain(failure)}")
            for index in indices:
                self.outputs[index] = unresolved
            return
        middle = len(indices) // 2
        for half in (indices[:middle], indices[middle:]):
            try:
                self._collect(half)
            except Exception as exc:
                if request_cancelled():
                    raise
                self._isolate(half, exc)


def empty_partitions(spark: SparkSession, schema: T.StructType, count: int) -> DataFrame:
    """`count` partitions with no rows, of `schema` as it is (nullability included), made in the JVM.

    An RDD made in Python (`sparkContext.parallelize([], count)`) runs through a Python worker
    factory of its own: after each candidate's fresh start, its first run with empty partitions
    waited about 1 s for that second daemon. The optimizer cannot see that these partitions are
    empty, so the union keeps them, as the job's empty partitions are kept.
    """
    from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

    session = spark._jsparkSession
    rows = spark.sparkContext._jsc.parallelize(spark.sparkContext._jvm.java.util.ArrayList(), count)
    return ClassicDataFrame(session.createDataFrame(rows, session.parseDataType(schema.json())), spark)


def arrow_frame(spark: SparkSession, schema: T.StructType, rows: list[tuple]) -> DataFrame | None:
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


def apply_build(frame: DataFrame, built: Any, label: str, keep: list[Column | str] | None = None) -> DataFrame:
    """`frame` with the columns in `keep` (default: the row id) and the build's result as OUTPUT."""
    keep = [ROW_ID] if keep is None else keep
    if isinstance(built, Column):
        return frame.select(*keep, built.alias(OUTPUT))
    if isinstance(built, (list, tuple)) and built and all(_is_step(step) for step in built):
        for step_name, step_column in built:
            frame = frame.withColumn(step_name, step_column)
        return frame.select(*keep, F.col(f"`{built[-1][0]}`").alias(OUTPUT))
    raise TargetError(f"{label}: build(*cols) must return a Column or a non-empty list of (name, Column) steps, not {type(built).__name__}")


SQL_RAISED = "SparkRuntimeException"
SQL_RAISED_NOTE = "the candidate's expression failed on this row (found in one job, each step evaluated under Spark's TryEval)"


def probe_build(frame: DataFrame, built: Any) -> DataFrame:
    """Which rows a sql build fails on, in one job: ROW_ID and OUTPUT (an error text, or null where it returned).

    Each step is evaluated under Catalyst's TryEval around a one-field struct, so a failure is a
    null struct and a null result is a struct holding null; a failed step's value is null for
    the steps after it, whose own failures then no longer matter (the row already failed).
    """
    jvm = frame.sparkSession._jvm
    utils = jvm.org.apache.spark.sql.classic.ExpressionUtils

    def tried(column: Column) -> Column:
        return Column(utils.column(jvm.org.apache.spark.sql.catalyst.expressions.TryEval(utils.expression(F.struct(column.alias("v"))._jc))))

    steps = [("__aether_output", built)] if isinstance(built, Column) else list(built)
    flags = []
    for position, (step_name, step_column) in enumerate(steps):
        flag = f"__aether_try_{position}"
        frame = frame.withColumn(flag, tried(step_column)).withColumn(step_name, F.col(flag)["v"])
        flags.append(F.col(flag).isNull())
    failed = flags[0]
    for flag_column in flags[1:]:
        failed = failed | flag_column
    return frame.select(ROW_ID, F.when(failed, F.lit(f"{SQL_RAISED}: {SQL_RAISED_NOTE}")).alias(OUTPUT))


def _output_field(spark: SparkSession, config: WorkspaceConfig, loaded: LoadedTarget, schema: T.StructType) -> tuple[str, bool]:
    """Analyse the plan once on an empty frame: contract errors surface here, before any job runs."""
    empty = spark.createDataFrame([], schema)
    try:
        frame = loaded.apply(empty, argument_columns(config))
        output = frame.schema[OUTPUT]
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(f"{loaded.label} cannot be applied to the argument columns: {explain(exc)}") from exc
    if loaded.target_kind == "sql":
        plan = frame._jdf.queryExecution().executedPlan().toString()
        found = [node for node in PYTHON_EVAL_NODES if node in plan]
        if found:
            raise TargetError(
                f"{loaded.label} is a 'sql' candidate but its plan still evaluates Python ({', '.join(found)}); "
                "a sql candidate may use only Spark SQL functions"
            )
    return output.dataType.simpleString(), output.nullable


def argument_columns(config: WorkspaceConfig) -> list[Column]:
    return [F.col(f"`{arg.name}`") for arg in config.udf.args]


def _is_step(step: Any) -> bool:
    return isinstance(step, (list, tuple)) and len(step) == 2 and isinstance(step[0], str) and isinstance(step[1], Column)


def is_import_failure(exc: BaseException) -> bool:
    return arrow_batches.IMPORT_FAILURE in str(exc)


def import_failure_message(exc: BaseException) -> str:
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
    return Raised(condition or type(exc).__name__, explain(exc))


class RowCoercer:
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
                raise BadRows(f"row {index}, argument {spark_field.name!r} ({spark_field.dataType.simpleString()}): {explain(exc)}") from exc
            values.append(value)
        return tuple(values)


def _accept(value: Any) -> None:
    return None


def _convenience(index: int, value: Any, spark_field: T.StructField, data_type: T.DataType | None = None) -> Any:
    data_type = spark_field.dataType if data_type is None else data_type
    # Lossless conveniences only: 3 for a double column is 3.0, "1.50" for a decimal is Decimal("1.50"), at every depth.
    if isinstance(value, int) and not isinstance(value, bool) and isinstance(data_type, (T.DoubleType, T.FloatType)):
        return float(value)
    if isinstance(value, (int, str)) and not isinstance(value, bool) and isinstance(data_type, T.DecimalType):
        try:
            return Decimal(value)
        except ArithmeticError as exc:
            raise BadRows(f"row {index}, argument {spark_field.name!r}: {value!r} is not a decimal") from exc
    if isinstance(value, list) and isinstance(data_type, T.ArrayType):
        return [_convenience(index, item, spark_field, data_type.elementType) for item in value]
    if isinstance(value, dict) and isinstance(data_type, T.StructType):
        unknown = [key for key in value if key not in data_type.names]
        if unknown:
            raise BadRows(f"row {index}, argument {spark_field.name!r}: {unknown[0]!r} is not a field of {data_type.simpleString()}; write a struct as a dict keyed by its field names")
        return type(value)((field.name, _convenience(index, value.get(field.name), spark_field, field.dataType)) for field in data_type.fields)
    if isinstance(value, dict) and isinstance(data_type, T.MapType):
        return {_convenience(index, key, spark_field, data_type.keyType): _convenience(index, item, spark_field, data_type.valueType) for key, item in value.items()}
    return value


def series_function(function: Callable[..., Any]) -> Callable[..., pd.Series]:
    def evaluate(*series: pd.Series) -> pd.Series:
        return function(*series)

    return evaluate


def _bounded(value: Any, low: int, high: int) -> int | None:
    if value is None:
        return None
    return max(low, min(high, int(value)))

