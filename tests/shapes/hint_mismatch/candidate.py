from pyspark.sql import functions as F

TARGET = "sql"


def build(total, units):
    return F.when(units.isNull() | (units == 0), F.lit(None)).otherwise(total / units.cast("double"))
