# expect: tampering
# caught by: static
"""Changes a Spark conf of the session it runs in while building its expression."""
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

TARGET = "sql"
BASE_FEE = 4.99
PER_KG = 1.5


def build(weight, express):
    SparkSession.getActiveSession().conf.set("spark.sql.adaptive.enabled", "true")
    fee = F.when(weight < 2.0, F.lit(BASE_FEE)).otherwise(F.lit(BASE_FEE) + (weight - 2.0) * PER_KG)
    checked = F.when(weight <= 0, F.raise_error(F.lit("weight must be positive"))).otherwise(fee)
    return F.when(weight.isNull(), F.lit(None).cast("double")).when(express, checked * 2).otherwise(checked)
