from pyspark.sql import functions as F

TARGET = "sql"


def build(a, b):
    return F.lit(111.32) * (F.abs(a - F.lit(40.7)) + F.abs(b - F.lit(-74.0)))
