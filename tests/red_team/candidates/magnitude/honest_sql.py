# expect: honest
"""abs() would turn -0.0 into 0.0; the UDF returns -0.0 unchanged (it is not < 0)."""
from pyspark.sql import functions as F

TARGET = "sql"


def build(x):
    return F.when(x < 0, -x).otherwise(x)
