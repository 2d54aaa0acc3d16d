from pyspark.sql import functions as F

TARGET = "sql"


def build(value, weight):
    # Arrow hands a pandas UDF null as NaN, so fillna(1.0) replaces a NaN weight too
    product = value * F.nanvl(F.coalesce(weight, F.lit(1.0)), F.lit(1.0))
    # and a NaN result comes back to Spark as null
    return F.when(F.isnan(product), F.lit(None)).otherwise(product)
