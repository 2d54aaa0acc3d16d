from pyspark.sql import SparkSession
from pyspark.sql.functions import udf
from pyspark.sql.types import DoubleType

from geo import grid_km

grid_km_udf = udf(grid_km, DoubleType())


def main():
    spark = SparkSession.builder.getOrCreate()
    trips = spark.read.parquet("trips")
    trips.withColumn("km", grid_km_udf("pickup_lat", "pickup_lon", "drop_lat", "drop_lon")).write.parquet("out")
