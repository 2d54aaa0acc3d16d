"""validate_on_data's trusted Spark application: `python -m aether_mcp.reference.validation_app REQUEST.json`.

Two phases, each its own application, with the candidate's application (aether_mcp.confined.
validation_app) between them; no application ever holds both the original and the candidate.

- `inputs`: reads the user's data, takes the argument columns (cast to the declared types),
  numbers the rows and writes them as `inputs/`. Nothing of the original runs yet.
- `compare`, after the candidate's application has ended: runs the original over `inputs/` as
  the job wires it and writes `original/` (row id, output, error), so its outputs never exist
  while candidate code runs (on a cluster, the candidate's executors are not confined). Where
  the original raises on some rows, the job as written would fail: those rows are found in one
  job by the probe byte_compare uses, kept with their error, and the original runs over the
  rest. Then the inputs and both outputs are joined on the row id and every row classified
  inside Spark (null-safe, NaN equal only to NaN, -0.0 apart from 0.0, floats by their exact
  text or within a declared ULP tolerance, structs, arrays and maps by their canonical JSON,
  raises matched). Only the counts and up to `samples` rows reach the driver.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from aether_mcp.confined import result_file
from aether_mcp.evaluation.data_runs import UserFacing, apply_and_write, session
from aether_mcp.evaluation.spark_errors import explain
from aether_mcp.evaluation.spark_session import jvm_compiler

INPUTS_PHASE, COMPARE_PHASE = "inputs", "compare"
INPUTS, ORIGINAL, CANDIDATE = "inputs", "original", "candidate"
KIND = "__aether_kind"
# mismatch kinds, in the order results list them
KINDS = (
    "missing_row",
    "raised_where_original_returned",
    "value_where_original_raised",
    "null_vs_value",
    "nan",
    "signed_zero",
    "float_bits",
    "value",
)
EXTRA_ROWS, DUPLICATE_ROWS = "extra_rows", "duplicate_rows"


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    report = result_file.progress_writer(request["progress"])

    try:
        if request["phase"] == INPUTS_PHASE:
            result = run_inputs(request, report)
        else:
            result = run_compare(request, report)
    except UserFacing as exc:
        result = {"error": str(exc)}
    except Exception as exc:  # reported with its traceback tail: the server turns it into a clear error
        result = {"error": f"{exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", "traceback": traceback.format_exc()[-3000:]}
    result_file.finish(request["result"], result, indent=2)
    return 0


def read_data(spark, data: dict[str, Any]):
    reader = spark.read
    if data["format"] == "csv":
        reader = reader.option("header", "true")
    if data["format"] == "json":
        reader = reader.option("mode", "FAILFAST")
    try:
        return reader.format(data["format"]).load(data["path"])
    except Exception as exc:
        raise UserFacing(f"Spark could not read {data['path']} as {data['format']}: {explain(exc, named=True)}") from None


def argument_inputs(config, frame, data: dict[str, Any]):
    """(the argument columns under the UDF's argument names, cast to their declared types; what was cast)."""
    from pyspark.sql import functions as F

    from aether_mcp.spark_types import parse_type

    names = [arg.name for arg in config.udf.args]
    sources = data.get("columns") or names
    present = {field.name: field.dataType for field in frame.schema.fields}
    missing = [column for column in sources if column not in present]
    if missing:
        shown = ", ".join(f"{name} {present[name].simpleString()}" for name in list(present)[:40])
        how = "name the data's column for each argument with columns=[...] in argument order" if not data.get("columns") else "fix columns=[...]"
        raise UserFacing(f"the data has no column {', '.join(repr(m) for m in missing)} (the UDF's arguments are {names}); {how}. The data's columns: {shown}")
    selected, casts = [], []
    for arg, column in zip(config.udf.args, sources):
        wanted = parse_type(arg.type)
        found = present[column]
        expression = F.col(f"`{column}`")
        if found != wanted:
            casts.append({"argument": arg.name, "column": column, "from": found.simpleString(), "to": wanted.simpleString()})
            expression = expression.cast(wanted)
        selected.append(expression.alias(arg.name))
    try:
        return frame.select(*selected), casts
    except Exception as exc:
        raise UserFacing(f"the data's columns do not cast to the UDF's argument types ({explain(exc, named=True)}); casts asked: {casts}") from None


def run_inputs(request: dict[str, Any], report) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from aether_mcp.evaluation.target_evaluation import ROW_ID

    folder = Path(request["folder"])
    report(0, 2, f"starting Spark ({request['master']})")
    config, spark = session(request, "aether-mcp-validate-inputs")
    frame, casts = argument_inputs(config, read_data(spark, request["data"]), request["data"])
    if request.get("limit"):
        frame = frame.limit(int(request["limit"]))
    report(1, 2, "numbering the rows and writing the inputs")
    started = time.perf_counter()
    frame.withColumn(ROW_ID, F.monotonically_increasing_id()).select(ROW_ID, *[arg.name for arg in config.udf.args]).write.parquet(str(folder / INPUTS))
    rows = spark.read.parquet(str(folder / INPUTS)).count()
    inputs_s = time.perf_counter() - started
    report(2, 2, f"{rows} rows written")
    environment = {"spark_version": spark.version, "master": request["master"], "default_parallelism": _parallelism(spark)}
    spark.stop()
    return {"rows": rows, "casts": casts, "inputs_s": round(inputs_s, 3), "environment": environment}


# --- compare ---------------------------------------------------------------------------------------


def run_compare(request: dict[str, Any], report) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from aether_mcp.evaluation.target_evaluation import ERROR, OUTPUT, ROW_ID, argument_columns, is_import_failure
    from aether_mcp.reference.original import load_original

    folder = Path(request["folder"])
    report(0, 4, f"starting Spark ({request['master']})")
    config, spark = session(request, "aether-mcp-validate-compare")
    compiler = jvm_compiler(spark, request["master"])  # the original's timing is read in this JVM
    names = [arg.name for arg in config.udf.args]
    inputs = spark.read.parquet(str(folder / INPUTS))
    # the original runs only now, after the candidate's application ended: its outputs never existed while candidate code ran
    loaded = load_original(config, request["original"]["source"], request["original"]["filename"])
    report(1, 4, "running the original")
    ran = apply_and_write(spark, loaded, inputs, argument_columns(config), str(folder / ORIGINAL), is_import_failure)
    original = spark.read.parquet(str(folder / ORIGINAL))
    candidate = spark.read.parquet(str(folder / CANDIDATE))
    out_type = original.schema[OUTPUT].dataType
    if not candidate.schema[OUTPUT].dataType == out_type:
        candidate_type = candidate.schema[OUTPUT].dataType.simpleString()
        report(4, 4, "done")
        spark.stop()
        return {"type_mismatch": f"the candidate returns {candidate_type}, the original {out_type.simpleString()}", "original": ran, "jvm_compiler": compiler}
    report(2, 4, "counting rows by id")
    ids = candidate.groupBy(ROW_ID).count()
    extra = ids.join(inputs.select(ROW_ID), ROW_ID, "left_anti")
    counted = ids.select(
        F.sum(F.when(F.col("count") > 1, F.col("count") - 1).otherwise(0)).alias("duplicates"),
    ).first()
    extra_rows = extra.select(F.sum("count")).first()[0] or 0
    o = original.select(F.col(ROW_ID), F.col(OUTPUT).alias("o"), F.col(ERROR).alias("oe"))
    c = candidate.dropDuplicates([ROW_ID]).select(F.col(ROW_ID), F.col(OUTPUT).alias("c"), F.col(ERROR).alias("ce"), F.lit(True).alias("present"))
    joined = inputs.join(o, ROW_ID, "left").join(c, ROW_ID, "left")
    tolerance = int(request.get("ulp_tolerance") or 0)
    allowed = bool(request.get("returns_where_original_raises"))
    kind, within = classify(F.col("o"), F.col("c"), out_type, tolerance, allowed)
    classified = joined.withColumn(KIND, kind).withColumn("__aether_within", within)
    report(3, 4, "classifying every row")
    groups = classified.groupBy(KIND, F.col("oe").isNotNull().alias("raised"), F.col("__aether_within")).count().collect()
    counts = {name: 0 for name in KINDS}
    rows = raised_rows = within_tolerance = allowed_rows = 0
    for group in groups:
        rows += group["count"]
        raised_rows += group["count"] if group["raised"] else 0
        within_tolerance += group["count"] if group["__aether_within"] else 0
        if group[KIND] == "allowed":
            allowed_rows += group["count"]
        elif group[KIND] is not None:
            counts[group[KIND]] += group["count"]
    samples = []
    limit = int(request.get("samples", 20))
    if limit and any(counts.values()):
        picked = classified.where(F.col(KIND).isNotNull() & (F.col(KIND) != "allowed")).select(ROW_ID, KIND, *[F.col(f"`{n}`") for n in names], "o", "oe", "c", "ce").limit(limit).collect()
        samples = [sample(row, names) for row in picked]
    report(4, 4, "done")
    spark.stop()
    return {
        "original": ran,
        "rows": rows,
        "counts": counts,
        EXTRA_ROWS: int(extra_rows),
        DUPLICATE_ROWS: int(counted["duplicates"] or 0),
        "original_raised": raised_rows,
        "within_tolerance": within_tolerance,
        "allowed_returns": allowed_rows,
        "samples": samples,
        "jvm_compiler": compiler,
    }


def classify(o, c, data_type, tolerance: int, allowed: bool):
    """(the mismatch kind of a row, null where it matches; whether floats matched only within the tolerance)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    oe, ce = F.col("oe"), F.col("ce")
    floating = isinstance(data_type, (T.DoubleType, T.FloatType))
    same_text = text(o, data_type) == text(c, data_type)
    kind = (
        F.when(F.col("present").isNull(), F.lit("missing_row"))
        .when(oe.isNotNull() & ce.isNotNull(), F.lit(None))
        .when(oe.isNotNull(), F.lit("allowed" if allowed else "value_where_original_raised"))
        .when(ce.isNotNull(), F.lit("raised_where_original_returned"))
        .when(o.isNull() & c.isNull(), F.lit(None))
        .when(o.isNull() | c.isNull(), F.lit("null_vs_value"))
    )
    within = F.lit(False)
    if floating:
        close = ulp_distance(o, c, isinstance(data_type, T.FloatType)) <= tolerance if tolerance else F.lit(False)
        kind = (
            kind.when(F.isnan(o) & F.isnan(c), F.lit(None))
            .when(F.isnan(o) | F.isnan(c), F.lit("nan"))
            .when(same_text, F.lit(None))
            .when((o == c) & (o == F.lit(0.0)), F.lit("signed_zero"))
            .when(close, F.lit(None))
            .otherwise(F.lit("float_bits"))
        )
        within = F.coalesce(F.col("present").isNotNull() & oe.isNull() & ce.isNull() & o.isNotNull() & c.isNotNull() & ~F.isnan(o) & ~F.isnan(c) & ~same_text & (o != F.lit(0.0)) & close, F.lit(False))
    else:
        kind = kind.when(same_text, F.lit(None)).otherwise(F.lit("value"))
    return kind, within


def text(column, data_type):
    """A text equal for two values exactly when they are the same value: floats by their shortest exact
    text (-0.0 and NaN apart), timestamps to the microsecond, maps with entries sorted, at every depth."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from aether_mcp.evaluation.cached_timing import canonical

    if isinstance(data_type, (T.StructType, T.ArrayType, T.MapType)):
        options = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX", "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS", "ignoreNullFields": "false"}
        return F.to_json(F.struct(canonical(column, data_type).alias("v")), options)
    if isinstance(data_type, T.BinaryType):
        return F.hex(column)
    return column.cast("string")


def ulp_distance(o, c, single: bool):
    """How many representable floats apart `o` and `c` are (both finite), in Spark."""
    from pyspark.sql import functions as F

    if single:
        bits = lambda v: F.call_function("java_method", F.lit("java.lang.Float"), F.lit("floatToIntBits"), v).cast("long")  # noqa: E731
        mask = 0x7FFFFFFF
    else:
        bits = lambda v: F.call_function("java_method", F.lit("java.lang.Double"), F.lit("doubleToLongBits"), v).cast("long")  # noqa: E731
        mask = 0x7FFFFFFFFFFFFFFF

    def ordered(v):
        b = bits(v)
        return F.when(b >= 0, b).otherwise(-(b.bitwiseAND(F.lit(mask)))).cast("decimal(21,0)")

    return F.abs(ordered(o) - ordered(c))


def sample(row, names: list[str]) -> dict[str, Any]:
    """One mismatching row as byte_compare shows one: Python reprs ('nan', '-0.0' exact), raises as 'raised Type: message'."""

    def show(value: Any) -> str:
        shown = repr(value)
        return shown if len(shown) <= 200 else shown[:197] + "..."

    def outcome(value: Any, error: str | None) -> str:
        return f"raised {error[:300]}" if error is not None else show(value)

    missing = row[KIND] == "missing_row"
    return {
        "row_id": row[0],
        "kind": row[1],
        "args": [show(row[2 + i]) for i in range(len(names))],
        "original": outcome(row["o"], row["oe"]),
        "candidate": "missing: the candidate wrote no row for this id" if missing else outcome(row["c"], row["ce"]),
    }


def _parallelism(spark) -> int | None:
    try:
        return spark.sparkContext.defaultParallelism
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv))
