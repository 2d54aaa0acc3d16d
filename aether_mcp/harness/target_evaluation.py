"""Evaluate a target (the original UDF or a candidate) on argument rows through a real SparkSession.

Runs inside a Spark worker. Rows become a DataFrame with the declared argument types (plus a
row id), the target is applied the way the user's job applies it (a Python UDF or pandas UDF
for the original, `build(*cols)` for `sql` candidates, a pandas UDF around `evaluate` for
`vectorized` and `kernel` candidates), and the outputs come back in row order as Python values.
A row on which the target raises is isolated by bisection and reported as a `Raised` value.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import pandas as pd
from pyspark import cloudpickle
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from aether_mcp.harness.value_codec import Raised
from aether_mcp.spark_types import parse_type
from aether_mcp.workspace import CANDIDATE_DIR, ORIGINAL_MODULE, WorkspaceConfig

ROW_ID = "__aether_row_id"
OUTPUT = "__aether_output"
CANDIDATE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CANDIDATE_TARGETS = ("sql", "vectorized", "kernel")
PYTHON_EVAL_NODES = ("BatchEvalPython", "ArrowEvalPython")


class TargetError(Exception):
    """The target cannot be evaluated at all (import error, bad contract, plan that does not analyse)."""


class BadRows(Exception):
    """The argument rows do not fit the UDF's declared argument types."""


@dataclass
class LoadedTarget:
    label: str
    target_kind: str  # "row", "pandas", "sql", "vectorized", "kernel"
    apply: Callable[[list[Column]], Column | list[tuple[str, Column]]]
    source_digest: str


def load_target(workspace: Path, config: WorkspaceConfig, target: str) -> LoadedTarget:
    """Import the original or a candidate from the workspace and wrap it as a Column builder."""
    return_type = parse_type(config.udf.return_type)
    if target == "original":
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
            return LoadedTarget("original", "pandas", lambda cols: pandas_udf(*cols), digest)
        row_udf = F.udf(function, return_type, useArrow=config.udf.use_arrow)
        return LoadedTarget("original", "row", lambda cols: row_udf(*cols), digest)

    name = target.removeprefix("candidate:")
    path = workspace / CANDIDATE_DIR / f"{name}.py"
    try:
        module = _load_module(path, f"aether_candidate_{name}")
    except Exception as exc:  # the candidate is untrusted code: any failure is its own
        raise TargetError(f"candidate/{name}.py failed to import: {exc.__class__.__name__}: {exc}") from exc
    kind = getattr(module, "TARGET", None)
    if kind not in CANDIDATE_TARGETS:
        raise TargetError(f"candidate/{name}.py must set TARGET to one of {', '.join(CANDIDATE_TARGETS)} (found {kind!r})")
    digest = _digest(path)
    if kind == "sql":
        build = getattr(module, "build", None)
        if not callable(build):
            raise TargetError(f"candidate/{name}.py has TARGET = 'sql' but no build(*cols) function")
        return LoadedTarget(target, "sql", lambda cols: build(*cols), digest)
    evaluate = getattr(module, "evaluate", None)
    if not callable(evaluate):
        raise TargetError(f"candidate/{name}.py has TARGET = {kind!r} but no evaluate(*series) function")
    vectorized = F.pandas_udf(_series_function(evaluate), return_type)
    return LoadedTarget(target, kind, lambda cols: vectorized(*cols), digest)


def evaluate_rows(spark: SparkSession, config: WorkspaceConfig, loaded: LoadedTarget, rows: list[list[Any]]) -> tuple[list[Any], str]:
    """Outputs of `loaded` on `rows`, in row order (a `Raised` where the target raised), and the output type."""
    schema = argument_schema(config)
    prepared = [_coerce_row(index, row, schema) for index, row in enumerate(rows)]
    output_type = _output_type(spark, config, loaded, schema)
    outputs: list[Any] = [None] * len(prepared)
    _evaluate_isolating(spark, config, loaded, schema, list(range(len(prepared))), prepared, outputs)
    return outputs, output_type


def argument_schema(config: WorkspaceConfig) -> T.StructType:
    fields = [T.StructField(ROW_ID, T.LongType(), False)]
    fields += [T.StructField(arg.name, parse_type(arg.type), True) for arg in config.udf.args]
    return T.StructType(fields)


def _output_type(spark: SparkSession, config: WorkspaceConfig, loaded: LoadedTarget, schema: T.StructType) -> str:
    """Analyse the plan once on an empty frame: contract errors surface here, before any job runs."""
    empty = spark.createDataFrame([], schema)
    try:
        frame = _apply(empty, config, loaded)
        output_type = frame.schema[OUTPUT].dataType.simpleString()
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
    return output_type


def _apply(frame: DataFrame, config: WorkspaceConfig, loaded: LoadedTarget) -> DataFrame:
    columns = [F.col(f"`{arg.name}`") for arg in config.udf.args]
    built = loaded.apply(columns)
    if isinstance(built, Column):
        return frame.select(ROW_ID, built.alias(OUTPUT))
    if isinstance(built, (list, tuple)) and built and all(_is_step(step) for step in built):
        for step_name, step_column in built:
            frame = frame.withColumn(step_name, step_column)
        return frame.select(ROW_ID, F.col(f"`{built[-1][0]}`").alias(OUTPUT))
    raise TargetError(
        f"{loaded.label}: build(*cols) must return a Column or a non-empty list of (name, Column) steps, "
        f"not {type(built).__name__}"
    )


def _is_step(step: Any) -> bool:
    return isinstance(step, (list, tuple)) and len(step) == 2 and isinstance(step[0], str) and isinstance(step[1], Column)


def _evaluate_isolating(spark, config, loaded, schema, indices, prepared, outputs) -> None:
    """Evaluate rows `indices`; when the job fails, split the rows until each failure is one row."""
    if not indices:
        return
    frame = spark.createDataFrame([prepared[i] for i in indices], schema)
    try:
        collected = _apply(frame, config, loaded).collect()
    except Exception as exc:
        if len(indices) == 1:
            outputs[indices[0]] = raised_from(exc)
            return
        middle = len(indices) // 2
        _evaluate_isolating(spark, config, loaded, schema, indices[:middle], prepared, outputs)
        _evaluate_isolating(spark, config, loaded, schema, indices[middle:], prepared, outputs)
        return
    for row in collected:
        outputs[row[ROW_ID]] = row[OUTPUT]


def raised_from(exc: BaseException) -> Raised:
    """The Python exception a UDF raised (from the worker traceback) or the Spark error class."""
    text = str(exc)
    python_lines = [line for line in text.splitlines() if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)?(: |$)", line)]
    if "Traceback (most recent call last)" in text and python_lines:
        last = python_lines[-1]
        exc_type, _, message = last.partition(": ")
        return Raised(exc_type.rsplit(".", 1)[-1], message.strip())
    error_class = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    condition = error_class() if callable(error_class) else None
    return Raised(condition or type(exc).__name__, _first_line(exc))


def _coerce_row(index: int, row: Any, schema: T.StructType) -> tuple:
    fields = schema.fields[1:]
    if not isinstance(row, (list, tuple)):
        raise BadRows(f"row {index} is {type(row).__name__} {row!r}; each row must be a list of {len(fields)} argument values")
    if len(row) != len(fields):
        names = ", ".join(f.name for f in fields)
        raise BadRows(f"row {index} has {len(row)} values but the UDF takes {len(fields)} ({names})")
    values = [index]
    for value, spark_field in zip(row, fields):
        values.append(_coerce_value(index, value, spark_field))
    return tuple(values)


def _coerce_value(index: int, value: Any, spark_field: T.StructField) -> Any:
    data_type = spark_field.dataType
    # Lossless conveniences only: 3 for a double column is 3.0, "1.50" for a decimal is Decimal("1.50").
    if isinstance(data_type, (T.DoubleType, T.FloatType)) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(data_type, T.DecimalType) and isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            return Decimal(value)
        except ArithmeticError as exc:
            raise BadRows(f"row {index}, argument {spark_field.name!r}: {value!r} is not a decimal") from exc
    try:
        T._make_type_verifier(data_type, nullable=True, name=spark_field.name)(value)
    except (TypeError, ValueError) as exc:
        raise BadRows(f"row {index}, argument {spark_field.name!r} ({data_type.simpleString()}): {_first_line(exc)}") from exc
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
    if not path.is_file():
        raise TargetError(f"{path.name} does not exist")
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__
