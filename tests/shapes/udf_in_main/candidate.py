from pyspark.sql import functions as F

TARGET = "sql"


def build(amount):
    # Spark orders NaN above every number; Python's NaN >= 1000.0 is False
    return (
        F.when(amount.isNull(), F.lit(None))
        .when(F.isnan(amount), "small")
        .when(amount >= 1000.0, "large")
        .when(amount >= 100.0, "medium")
        .otherwise("small")
    )
