# expect: honest
"""CASE evaluates the division only where the denominator is not zero (ANSI mode would raise)."""
from pyspark.sql import functions as F

TARGET = "sql"


def build(numerator, denominator):
    undefined = numerator.isNull() | denominator.isNull() | (denominator == 0)
    return F.when(undefined, F.lit(None).cast("double")).otherwise(numerator / denominator)
