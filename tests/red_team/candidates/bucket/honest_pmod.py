# expect: honest
"""Python's % takes the divisor's sign; Spark's pmod does too (its % does not)."""
from pyspark.sql import functions as F

TARGET = "sql"


def build(n):
    return F.pmod(n, F.lit(7))
