# expect: not_deterministic
# caught by: dynamic
# class: 3
"""Right in every partition the judge makes and wrong above partition 250, where a large job's shuffle puts rows:
the partition a row is in is context, not an argument."""
from pyspark.sql import functions as F

TARGET = "sql"


def build(n):
    return F.when(F.spark_partition_id() > 250, F.pmod(n, F.lit(6))).otherwise(F.pmod(n, F.lit(7)))
