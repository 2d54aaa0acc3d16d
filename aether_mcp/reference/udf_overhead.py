"""What a row-at-a-time Python UDF costs per row in Spark on this machine, beyond the work it does.

Run as a child process: one local Spark session on one core sums `x + 1` over N rows with a
built-in expression and with an identity Python UDF; the difference per row is the cost of
shipping the row to a Python worker and back. The best of three runs of each is kept.
Writes {"seconds_per_row", "rows", "plain_s", "udf_s", "pyspark"} as JSON to the path given.
"""

from __future__ import annotations

import json
import os
import sys
import time


def measure(rows: int) -> dict:
    import pyspark
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.functions import udf

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("aether-udf-overhead")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
        .getOrCreate()
    )
    try:
        frame = spark.range(rows, numPartitions=1).select(F.col("id").cast("double").alias("x")).cache()
        frame.count()
        identity = udf(lambda x: x, "double")

        def best(column) -> float:
            times = []
            for _ in range(3):
                started = time.perf_counter()
                frame.select(F.sum(column + 1)).collect()
                times.append(time.perf_counter() - started)
            return min(times)

        best(identity("x"))  # the Python worker starts once, outside the timed runs
        plain, with_udf = best(F.col("x")), best(identity("x"))
        return {"seconds_per_row": max(with_udf - plain, 0.0) / rows, "rows": rows, "plain_s": plain, "udf_s": with_udf, "pyspark": pyspark.__version__}
    finally:
        spark.stop()


def main() -> None:
    out_path, rows = sys.argv[1], int(sys.argv[2])
    result = measure(rows)
    with open(out_path + ".partial", "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    os.replace(out_path + ".partial", out_path)


if __name__ == "__main__":
    main()
