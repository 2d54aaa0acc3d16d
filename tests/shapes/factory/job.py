"""Distances from a depot, the depot fixed when the UDF is made."""
from pyspark.sql import functions as F
from pyspark.sql.functions import udf
from pyspark.sql.types import DoubleType

KM_PER_DEGREE = 111.32


def make_distance_udf(lat, lon):
    return udf(
        lambda a, b: None if a is None or b is None else KM_PER_DEGREE * (abs(a - lat) + abs(b - lon)),
        DoubleType(),
    )


def main(spark, stores):
    from_depot = make_distance_udf(40.7, -74.0)
    stores.select(from_depot(F.col("lat"), F.col("lon"))).show()
