"""Candidates as Spark transformations, in the confined candidate worker: loaded from the text the server read.

A `sql` candidate's `build(*cols)` runs in a throwaway process under the watch (see sql_build) and
only its expression comes back, read into this worker's session; a `vectorized`/`kernel`
candidate runs in Spark's Python workers through `mapInArrow`, its source shipped by value
inside the mapper. This process never executes candidate code.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_type

from aether_mcp.confined import arrow_batches, job_environment, sql_build, watch
from aether_mcp.confined.arrow_batches import AUDIT, ERROR, EVENTS, OUTPUT, ROW_ID
from aether_mcp.evaluation.source_modules import digest
from aether_mcp.evaluation.spark_errors import explain
from aether_mcp.evaluation.target_evaluation import (
    ARROW_BATCH_CONF,
    EMPTY_GROUP,
    LoadedTarget,
    RowCoercer,
    TargetError,
    apply_build,
    argument_columns,
    argument_schema,
    arrow_frame,
    group_rows,
    import_failure_message,
    is_grouped,
    is_import_failure,
    probe_build,
)
from aether_mcp.spark_types import parse_type
from aether_mcp.wire.value_codec import Raised
from aether_mcp.workspace.candidates import BadCandidate, declared_target, defines_function

TINY_BATCH_ROWS = 200  # rows run again one per batch, to catch results that depend on the batch
PYTHON_PLAN_NODES = (
    "BatchEvalPython", "ArrowEvalPython", "MapInPandas", "MapInArrow", "PythonMapInArrow", "FlatMapGroupsInPandas",
    "FlatMapCoGroupsInPandas", "AggregateInPandas", "WindowInPandas", "PythonUDTF", "EvalPythonUDTF", "PythonUDF",
)
# Expressions that call arbitrary JVM methods or read files, as they print in an executed plan.
JVM_PLAN_CALLS = re.compile(r"\b(?:try_reflect|reflect|java_method|input_file_name|input_file_block_start|read_files)\(", re.IGNORECASE)


def in_the_job(config: Any, name: str) -> str:
    """The module name apply_conversion gives candidate `name` beside the job: the judge's module is called that too."""
    return f"{config.udf.name}_{name}"


def load_candidate(config: Any, target: str, source: str, filename: str) -> LoadedTarget:
    """A candidate's transformation (a sql candidate's build run anew in a throwaway process)."""
    name = target.removeprefix("candidate:")
    try:
        kind = declared_target(source, name)
    except BadCandidate as exc:
        raise TargetError(str(exc)) from None
    return_type = parse_type(config.udf.return_type)
    named = in_the_job(config, name)
    watch.add_agent_code(os.path.dirname(filename))
    if kind == "sql":
        # The build runs in a throwaway process (see sql_build): nothing it does stays in this one.
        job_environment.as_in_a_job()
        try:
            result = sql_build.build_in_child(source, filename, name, [arg.name for arg in config.udf.args], named=named)
        except sql_build.BuildFailed as exc:
            raise TargetError(f"{target}: {exc}; build(*cols) should only compose Columns (no loops over data, no waiting), so fix it and run again") from None
        events = result.get("events") or []
        if not result.get("ok"):
            stage, message = result.get("stage"), result.get("message", "")
            if stage == "import":
                text = message if message.startswith("candidate/") else f"candidate/{name}.py failed to import: {message}"
            elif stage == "build":
                text = f"{target}: build(*cols) raised {message}" + (
                    "; build(*cols) runs without a Spark session: compose Columns from pyspark.sql.functions and the columns it is given" if "NoneType" in message or "session" in message.lower() else ""
                )
            else:
                text = f"{target}: {message}"
            raise TargetError(text, events=events)
        try:
            built = sql_build.to_columns(SparkSession.active(), result["steps"])
        except Exception as exc:  # an expression Spark cannot read back
            raise TargetError(f"{target}: its expression could not be read back: {explain(exc)}", events=events) from None
        if is_grouped(config):
            if not isinstance(built, Column):
                raise TargetError(f"{target}: the UDF is an aggregation, so build(*cols) must return one aggregate Column (e.g. F.max(c) - F.min(c)), not {type(built).__name__}")
            return LoadedTarget(
                target, "sql", lambda frame, cols: group_rows(frame, config).groupBy(ROW_ID).agg(built.alias(OUTPUT)), digest(source), built=built, events=events
            )
        # Columns refer to the arguments by name, so one build serves every frame.
        return LoadedTarget(
            target,
            "sql",
            lambda frame, cols: apply_build(frame, built, target),
            digest(source),
            probe=lambda frame, cols: probe_build(frame, built),
            built=built,
            events=events,
        )
    if not defines_function(source, "evaluate"):
        raise TargetError(f"candidate/{name}.py has TARGET = {kind!r} but no evaluate(*series) function")
    mapper = arrow_batches.make_mapper(source, digest(source), filename, "evaluate", to_arrow_type(return_type), named=named)
    schema = T.StructType(
        [
            T.StructField(ROW_ID, T.LongType(), False),
            T.StructField(OUTPUT, return_type, True),
            T.StructField(ERROR, T.StringType(), True),
            T.StructField(EVENTS, T.StringType(), True),
        ]
    )
    if is_grouped(config):
        grouped = arrow_batches.make_group_mapper(source, digest(source), filename, "evaluate", to_arrow_type(return_type), named=named)
        return LoadedTarget(target, kind, lambda frame, cols: group_rows(frame, config).groupBy(ROW_ID).applyInArrow(grouped, schema), digest(source))
    return LoadedTarget(target, kind, lambda frame, cols: frame.select(F.col(ROW_ID), *cols).mapInArrow(mapper, schema), digest(source))


def audit_target(
    spark: SparkSession, config: Any, target: str, source: str, filename: str, runs: dict[str, tuple[list[list[Any]], int]], splits: dict[str, list[int]] | None = None
) -> dict[str, Any]:
    """Run a candidate under watch: what it does while it loads and runs, and what the plan holds.

    sql: the build runs watched in this process and the executed plan is searched for Python
    nodes. vectorized/kernel: each run (label -> rows, Arrow batch size) goes through Spark's
    Python workers in one partition, every batch counted; all outputs come back to be compared.
    `splits`: runs whose rows reach the candidate in batches of exactly the given lengths.
    """
    name = target.removeprefix("candidate:")
    try:
        kind = declared_target(source, name)
    except BadCandidate as exc:
        raise TargetError(str(exc)) from None
    schema = argument_schema(config)
    if kind == "sql":
        loaded = load_candidate(config, target, source, filename)
        events = loaded.events + watch.drain()
        frame = loaded.apply(spark.createDataFrame([], schema), argument_columns(config))
        execution = frame._jdf.queryExecution()
        plan = execution.executedPlan().toString()
        return {
            "kind": kind,
            "events": events,
            "plan_python_nodes": [node for node in PYTHON_PLAN_NODES if node in plan],
            "plan_jvm_calls": sorted(set(JVM_PLAN_CALLS.findall(plan))),
            "plan_expressions": expression_classes(execution.analyzed()),
            "analysed_plan": judged_plan(spark, config, loaded.built, target),
        }
    if not defines_function(source, "evaluate"):
        raise TargetError(f"candidate/{name}.py has TARGET = {kind!r} but no evaluate(*series) function")
    return_type = parse_type(config.udf.return_type)
    named = in_the_job(config, target.removeprefix("candidate:"))
    mapper = arrow_batches.make_mapper(source, digest(source), filename, "evaluate", to_arrow_type(return_type), audit=True, named=named)
    group_mapper = arrow_batches.make_group_mapper(source, digest(source), filename, "evaluate", to_arrow_type(return_type), audit=True, named=named) if is_grouped(config) else None
    out_schema = T.StructType(
        [
            T.StructField(ROW_ID, T.LongType(), False),
            T.StructField(OUTPUT, return_type, True),
            T.StructField(ERROR, T.StringType(), True),
            T.StructField(EVENTS, T.StringType(), True),
            T.StructField(AUDIT, T.StringType(), True),
        ]
    )
    results: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    for label, (rows, batch_rows) in runs.items():
        run_mapper, run_schema = mapper, out_schema
        if (splits or {}).get(label) and group_mapper is None:
            run_schema = T.StructType([field for field in out_schema.fields if field.name != AUDIT])
            # only the outputs (and the watch's events) of a sweep matter: no step counter on it
            run_mapper = arrow_batches.make_mapper(source, digest(source), filename, "evaluate", to_arrow_type(return_type), lengths=list(splits[label]), named=named)
        coerce = RowCoercer(schema, verify=False)
        prepared = [coerce(index, row) for index, row in enumerate(rows)]
        frame = (arrow_frame(spark, schema, prepared) or spark.createDataFrame(prepared, schema, verifySchema=False)).coalesce(1)
        previous = spark.conf.get(ARROW_BATCH_CONF)
        spark.conf.set(ARROW_BATCH_CONF, str(batch_rows))
        try:
            if group_mapper is not None:  # one call per group: the rows' arrays are the groups
                collected = group_rows(frame, config).groupBy(ROW_ID).applyInArrow(group_mapper, out_schema).collect()
            else:
                collected = frame.select(F.col(ROW_ID), *argument_columns(config)).mapInArrow(run_mapper, run_schema).collect()
        except Exception as exc:
            if is_import_failure(exc):
                raise TargetError(f"{target} failed to load: {import_failure_message(exc)}") from None
            raise
        finally:
            spark.conf.set(ARROW_BATCH_CONF, previous)
        outputs: list[Any] = [EMPTY_GROUP if group_mapper is not None else None] * len(prepared)
        reports = []
        for row in collected:
            error = row[ERROR]
            outputs[row[ROW_ID]] = row[OUTPUT] if error is None else Raised(*(error.partition(": ")[::2]))
            if run_schema is out_schema and row[AUDIT]:
                reports.append(json.loads(row[AUDIT]))
            if row[EVENTS]:
                events += json.loads(row[EVENTS])
        results[label] = {
            "outputs": outputs,
            "calls": sum(r["calls"] for r in reports),
            "rows": sum(r["rows"] for r in reports),
            "inputs_changed": any(r["inputs_changed"] for r in reports),
            "state_changed": sorted({name for r in reports for name in r.get("state_changed", [])}),
            "threads_left": max([r["threads_left"] for r in reports] or [0]),
            "children_left": max([r["children_left"] for r in reports] or [0]),
        }
    return {"kind": kind, "events": events, "runs": results}


def judged_plan(spark: SparkSession, config: Any, built: Any, label: str) -> str:
    """The analysed plan of a sql build over an empty frame of the arguments, as the judge applies it; expression ids left out.

    Computed where the judge built the candidate and where it was built as its job builds it
    (aether_mcp.confined.classic_build): the two must be the same plan.
    """
    frame = spark.createDataFrame([], argument_schema(config))
    if is_grouped(config):
        if not isinstance(built, Column):
            raise TargetError(f"{label}: the UDF is an aggregation, so build(*cols) must return one aggregate Column, not {type(built).__name__}")
        judged = group_rows(frame, config).groupBy(ROW_ID).agg(built.alias(OUTPUT))
    else:
        judged = apply_build(frame, built, label)
    return re.sub(r"#\d+L?", "#", judged._jdf.queryExecution().analyzed().toString())


def expression_classes(plan: Any) -> list[str]:
    """The class names of every expression in an analyzed logical plan (a JVM object), in first-seen order.

    Read from the plan's JSON, whose nodes each name their class; plan nodes (Project, LocalRelation)
    are left out.
    """
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            name = value.get("class")
            if isinstance(name, str) and ".plans." not in name and ".execution." not in name:
                found[name.rsplit(".", 1)[-1].split("$")[0]] = None
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(plan.toJSON()))
    return list(found)


def plan_target(spark: SparkSession, config: Any, loaded: LoadedTarget, data: str) -> dict[str, Any]:
    """The plan profile of a sql candidate over the Parquet file `data`, wired as a job wires it (an aggregation in groupBy().agg())."""
    from aether_mcp.confined.plan_profile import profile_plan

    frame = spark.read.parquet(data)
    if is_grouped(config):
        values = group_rows(frame.withColumn(ROW_ID, F.monotonically_increasing_id()), config, ordered=False)
        return profile_plan(values.groupBy(ROW_ID).agg(loaded.built.alias(OUTPUT)))
    keep = [F.col(f"`{c}`") for c in frame.columns]
    helpers = [name for name, _column in loaded.built[:-1]] if isinstance(loaded.built, (list, tuple)) else []
    return profile_plan(apply_build(frame, loaded.built, loaded.label, keep=keep), helpers)
