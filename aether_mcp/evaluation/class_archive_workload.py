"""Spark's startup classes archived: `python -m aether_mcp.evaluation.class_archive_workload ARCHIVE`.

Started only by the server (processes/class_archive), never with agent code: a local SparkSession
whose JVM runs with -XX:ArchiveClassesAtExit=ARCHIVE goes through what the server's Spark processes
do (a session, Arrow batches through a pandas UDF and mapInArrow, a Python UDF, Parquet written and
read, a shuffle, expressions compiled), then stops; the JVM writes every class it loaded from
Spark's jars into ARCHIVE as it exits. Each later JVM given -XX:SharedArchiveFile=ARCHIVE maps those
classes instead of loading and verifying them from the jars.
"""


import os
import sys
import tempfile
from pathlib import Path


def main(argv: list[str]) -> int:
    archive = Path(argv[1])
    import pandas as pd
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from aether_mcp.evaluation.spark_session import HARNESS_CONF, QUICK_JIT

    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = SparkSession.builder.master("local[1]").appName("aether-mcp-class-archive")
    for key, value in HARNESS_CONF.items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.extraJavaOptions", f"{QUICK_JIT} -XX:ArchiveClassesAtExit={archive}")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    @F.pandas_udf(T.DoubleType())
    def doubled(values: pd.Series) -> pd.Series:
        return values * 2.0

    @F.udf(T.StringType())
    def labelled(value):
        return None if value is None else f"n{value}"

    def passed(batches):
        yield from batches

    frame = spark.range(2000).withColumn("x", F.col("id").cast("double")).withColumn("s", F.concat(F.lit("a"), F.col("id").cast("string")))
    frame = frame.withColumn("y", doubled("x")).withColumn("t", labelled("id")).withColumn("r", F.round(F.col("x") / 3, 2))
    frame.groupBy((F.col("id") % 7).alias("k")).agg(F.sum("y"), F.count("t"), F.max("s")).collect()
    frame.mapInArrow(passed, frame.schema).selectExpr("sum(x)", "max(length(t))").collect()
    with tempfile.TemporaryDirectory() as folder:
        frame.write.parquet(f"{folder}/data")
        spark.read.parquet(f"{folder}/data").where(F.col("x") > 10).select(F.when(F.col("x").isNull(), None).otherwise(F.col("t"))).collect()
        frame.select("id", "x").toPandas()
    spark.stop()
    # the archive is written as the JVM exits: end it (its input closed) and wait for the write
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    if process is not None:
        process.stdin.close()
        process.wait(timeout=240)
    return 0 if archive.is_file() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
