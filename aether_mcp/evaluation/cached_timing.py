"""A target timed over cached rows in a warm worker: micro_benchmark for targets that only run in Spark.

The rows are read once and cached, so each timed run is the target's own work: the original UDF
(Python workers and all) in the reference worker, a sql candidate's expression in the candidate
worker. Each run writes the output column to Spark's `noop` sink, which makes Spark evaluate every
value without bringing any of it to the driver, as run_benchmark's runs do. Each run is a new query:
re-running one DataFrame's action would reuse its finished shuffle stages and time almost nothing.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from aether_mcp.evaluation.target_evaluation import OUTPUT, ROW_ID, LoadedTarget, argument_columns

WARMUP_RUNS = 1


def time_cached(spark: SparkSession, config: Any, loaded: LoadedTarget, data: str, repeats: int, floor: bool = False, steps: bool = False) -> dict[str, Any]:
    """Seconds of each of `repeats` runs of `loaded` over the Parquet rows at `data`, after one unrecorded run.

    `floor`: also time, in the same rounds, the arguments alone written the same way (no target): a job's fixed cost here.
    `steps` (a sql build of (name, Column) steps): also time, in the same rounds, every step up to each one written out
    (under "step_seconds", by step), so that the differences between consecutive ones are what each step adds.
    """
    frame = spark.read.parquet(data).withColumn(ROW_ID, F.monotonically_increasing_id()).cache()
    try:
        rows = frame.count()
        names = [arg.name for arg in config.udf.args]
        jobs = {"seconds": lambda: loaded.apply(frame, argument_columns(config)).select(OUTPUT)}
        if floor or steps:
            jobs["floor_seconds"] = lambda: frame.select(*[F.col(f"`{name}`") for name in names])
        built = loaded.built if steps and isinstance(loaded.built, (list, tuple)) else []
        for count in range(1, len(built) + 1):
            jobs[f"step:{built[count - 1][0]}"] = lambda count=count: _up_to(frame, built[:count])
        timed: dict[str, list[float]] = {key: [] for key in jobs}
        for run in range(WARMUP_RUNS + repeats):
            for key, job in jobs.items():
                started = time.perf_counter()
                job().write.format("noop").mode("overwrite").save()
                if run >= WARMUP_RUNS:
                    timed[key].append(time.perf_counter() - started)
        step_seconds = {key.removeprefix("step:"): timed.pop(key) for key in list(timed) if key.startswith("step:")}
        return {"rows": rows, **timed, **({"step_seconds": step_seconds} if steps else {})}
    finally:
        frame.unpersist()


def _up_to(frame: Any, steps: list[tuple[str, Any]]) -> Any:
    """Every one of `steps` computed and written out: a step is a column later steps refer to by name."""
    for name, column in steps:
        frame = frame.withColumn(name, column)
    return frame.select(*[F.col(f"`{name}`") for name, _ in steps])


def canonical(column: Any, data_type: T.DataType) -> Any:
    """`column` in a form that hashes and prints the same for equal values: maps as their entries sorted by key
    (Spark cannot hash a map, and two equal maps may list their entries in different orders), at every depth."""
    if isinstance(data_type, T.MapType):
        entries = F.transform(F.map_entries(column), lambda e: F.struct(canonical(e["key"], data_type.keyType).alias("key"), canonical(e["value"], data_type.valueType).alias("value")))
        return F.array_sort(entries)
    if isinstance(data_type, T.StructType) and holds_map(data_type):
        return F.when(column.isNotNull(), F.struct(*[canonical(column[f.name], f.dataType).alias(f.name) for f in data_type.fields]))
    if isinstance(data_type, T.ArrayType) and holds_map(data_type):
        return F.transform(column, lambda element: canonical(element, data_type.elementType))
    return column


def holds_map(data_type: T.DataType) -> bool:
    return "map<" in data_type.simpleString()

