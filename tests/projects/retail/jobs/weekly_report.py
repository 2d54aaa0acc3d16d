"""Weekly report: reuses the shared UDFs through the module."""
import udfs
from pyspark.sql import SparkSession


def main(path):
    spark = SparkSession.builder.getOrCreate()
    sales = spark.read.parquet(path)
    sales.select(udfs.clean_name("customer"), udfs.zscore("score")).write.parquet(path + "_weekly")
