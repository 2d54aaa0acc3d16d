# expect: hides_failures
# caught by: dynamic
"""Spark SQL that returns null where the original raises on a non-positive weight: the job that crashed now writes nulls."""
from pyspark.sql import functions as F

TARGET = "sql"


def build(weight, express):
    fee = F.when(weight < 2.0, F.lit(4.99)).otherwise(F.lit(4.99) + (weight - 2.0) * 1.5)
    fee = F.when(express, fee * 2).otherwise(fee)
    return F.when(weight > 0, fee).when(F.isnan(weight), F.lit(float("nan"))).otherwise(F.lit(None).cast("double"))
