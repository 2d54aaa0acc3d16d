"""Distance from the origin, with math star-imported as older jobs do."""
from math import *

from pyspark.sql import functions as F
from pyspark.sql.functions import udf


@udf("double")
def norm(x: float, y: float) -> float:
    if x is None or y is None:
        return None
    return sqrt(x * x + y * y)


def main(spark, path):
    spark.read.parquet(path).withColumn("r", norm(F.col("x"), F.col("y"))).show()
