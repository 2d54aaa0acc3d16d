"""Running a target over numbered rows in a Spark application and writing what it gave: shared by validate_on_data's two sides."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aether_mcp.evaluation.spark_errors import explain


class UserFacing(Exception):
    """A problem with what was asked (a column missing, a type that does not cast): said as is."""


def session(request: dict[str, Any], name: str):
    from aether_mcp.evaluation.spark_session import create_session
    from aether_mcp.workspace import WorkspaceConfig

    config = WorkspaceConfig.model_validate(request["config"])
    local = Path(request["scratch"]) / "spark-local"
    local.mkdir(parents=True, exist_ok=True)
    conf = {**config.spark.conf, **request.get("conf", {})}
    if not request["master"].startswith("sc://"):
        conf["spark.local.dir"] = str(local)
    return config, create_session(request["master"], conf, name, quick_jit=bool(request.get("quick_jit")))


def apply_and_write(spark, loaded, inputs, columns, path: str, is_import_failure, wired=None) -> dict[str, Any]:
    """Run `loaded` over `inputs` and write (row id, output, error) to `path`; its timing and how rows that raised were found.

    `wired`: the transformation as a job wires it (timed first); default `loaded.apply`. Where it
    fails, rows that raise are found with `loaded.probe` (or the per-row errors `loaded.apply`
    gives, for Arrow batches that isolate rows) and the rest run again.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from aether_mcp.evaluation.target_evaluation import ERROR, OUTPUT, ROW_ID

    wired = wired or loaded.apply
    started = time.perf_counter()
    try:
        frame = wired(inputs, columns)
        if ERROR not in frame.columns:
            frame = frame.withColumn(ERROR, F.lit(None).cast(T.StringType()))
        frame.select(ROW_ID, OUTPUT, ERROR).write.mode("overwrite").parquet(path)
        return {"seconds": round(time.perf_counter() - started, 3), "raised_rows": 0, "timed": "every row, as the job wires it"}
    except Exception as exc:
        if is_import_failure(exc):
            raise UserFacing(f"{loaded.label} failed to load in Spark's Python workers: {explain(exc, named=True)}") from None
        failure = explain(exc, named=True)
    # some row raised: find which, in one job, then run over the others
    if loaded.probe is not None:
        try:
            probed = loaded.probe(inputs, columns).where(F.col(OUTPUT).isNotNull())
        except Exception as exc:  # the sql probe needs the driver's JVM, which a Spark Connect client has not
            raise UserFacing(
                f"{loaded.label} failed on some rows ({failure[:300]}), and the rows cannot be told apart here ({explain(exc, named=True)[:200]}); "
                "validate on a local or spark:// master to count them, or run byte_compare"
            ) from None
        probed.select(ROW_ID, F.lit(None).cast(loaded_output_type(spark, loaded, inputs, columns)).alias(OUTPUT), F.col(OUTPUT).alias(ERROR)).write.mode("overwrite").parquet(path)
        raised = spark.read.parquet(path)
        count = raised.count()
        clean = inputs.join(raised.select(ROW_ID), ROW_ID, "left_anti")
        started = time.perf_counter()
        frame = loaded.apply(clean, columns)
        if ERROR not in frame.columns:
            frame = frame.withColumn(ERROR, F.lit(None).cast(T.StringType()))
        frame.select(ROW_ID, OUTPUT, ERROR).write.mode("append").parquet(path)
        seconds = time.perf_counter() - started
    else:  # Arrow batches that isolate failing rows themselves
        started = time.perf_counter()
        loaded.apply(inputs, columns).select(ROW_ID, OUTPUT, ERROR).write.mode("overwrite").parquet(path)
        seconds = time.perf_counter() - started
        count = spark.read.parquet(path).where(F.col(ERROR).isNotNull()).count()
    return {"seconds": round(seconds, 3), "raised_rows": count, "timed": f"the rows it returned on, after the job as wired failed ({failure[:300]})"}


def loaded_output_type(spark, loaded, inputs, columns):
    return loaded.apply(inputs.limit(0), columns).schema[_output_name()].dataType


def _output_name() -> str:
    from aether_mcp.evaluation.target_evaluation import OUTPUT

    return OUTPUT
