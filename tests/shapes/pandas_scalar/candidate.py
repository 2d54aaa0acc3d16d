from pyspark.sql import functions as F

TARGET = "sql"


def build(fahrenheit):
    celsius = (fahrenheit - 32) * 5.0 / 9.0
    # a pandas UDF's NaN result comes back to Spark as null
    return F.when(F.isnan(celsius), F.lit(None)).otherwise(celsius)
