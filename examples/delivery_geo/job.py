"""Delivery distance enrichment job.

Adds the great-circle distance between depot and drop-off to every delivery
in an extract (parquet, or CSV with a header) and writes parquet.

Usage::

    spark-submit job.py INPUT_PATH OUTPUT_PATH

Input columns used: ``depot_lat``, ``depot_lon``, ``drop_lat``, ``drop_lon``
(double, degrees).
"""

import math
import sys

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import DoubleType

EARTH_RADIUS_KM = 6371.0088  # IUGG mean Earth radius


def _haversine(lat1, lon1, lat2, lon2):
    """Great-circle distance in km between two (lat, lon) points in degrees.

    Returns None when a coordinate is missing, not finite or out of range
    (|lat| > 90, |lon| > 180): upstream GPS fixes are sometimes garbage, and
    math.sin(inf) would raise instead of giving a distance.  Spark hands a
    pandas UDF missing doubles as NaN, so the finiteness check covers them.
    """
    for lat, lon in ((lat1, lon1), (lat2, lon2)):
        if not (math.isfinite(lat) and math.isfinite(lon)):
            return None
        if abs(lat) > 90.0 or abs(lon) > 180.0:
            return None

    phi1 = math.radians(lat1)
    phi2 = math.radians(lat2)
    half_dphi = math.sin(math.radians(lat2 - lat1) / 2.0)
    half_dlambda = math.sin(math.radians(lon2 - lon1) / 2.0)
    a = (half_dphi * half_dphi
         + math.cos(phi1) * math.cos(phi2) * half_dlambda * half_dlambda)
    # Rounding can push sqrt(a) a hair above 1 for antipodal points, and
    # math.asin raises ValueError outside [-1, 1].
    return 2.0 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


# DoubleType() rather than the DDL string "double": PySpark 4 parses a string
# return type through the JVM when the decorator runs, so @pandas_udf("double")
# fails at import time unless a SparkSession already exists.
@pandas_udf(DoubleType())
def haversine_km(lat1: pd.Series, lon1: pd.Series,
                 lat2: pd.Series, lon2: pd.Series) -> pd.Series:
    """Row-by-row haversine distance in km.

    Spark delivers null doubles to a pandas UDF as NaN, so missing and NaN
    coordinates look the same here; both give None, which (like any NaN in
    the returned float64 Series) Spark turns into a SQL null.
    """
    distances = []
    for a_lat, a_lon, b_lat, b_lon in zip(lat1, lon1, lat2, lon2):
        distances.append(_haversine(a_lat, a_lon, b_lat, b_lon))
    return pd.Series(distances, index=lat1.index, dtype="float64")


def main():
    if len(sys.argv) != 3:
        print(f"usage: {sys.argv[0]} INPUT_PATH OUTPUT_PATH", file=sys.stderr)
        return 2
    input_path, output_path = sys.argv[1], sys.argv[2]

    spark = SparkSession.builder.appName("delivery_geo").getOrCreate()
    try:
        if input_path.endswith(".csv"):
            deliveries = spark.read.csv(
                input_path,
                header=True,
                schema=("delivery_id string, depot_lat double, depot_lon double, "
                        "drop_lat double, drop_lon double"),
            )
        else:
            deliveries = spark.read.parquet(input_path)

        enriched = deliveries.withColumn(
            "distance_km",
            haversine_km(F.col("depot_lat"), F.col("depot_lon"),
                         F.col("drop_lat"), F.col("drop_lon")),
        )
        enriched.write.mode("overwrite").parquet(output_path)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
