"""Nightly shipping-fee job."""
import sys

from pyspark.sql import SparkSession
from pyspark.sql.functions import udf

BASE_FEE = 4.99
PER_KG = 1.5


@udf("double")
def shipping_fee(weight: float, express: bool) -> float:
    if weight is None:
        return None
    if weight <= 0:
        raise ValueError("weight must be positive")
    fee = BASE_FEE if weight < 2.0 else BASE_FEE + (weight - 2.0) * PER_KG
    return fee * 2 if express else fee


def main(path):
    spark = SparkSession.builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()
    spark.read.parquet(path).withColumn("fee", shipping_fee("weight", "express")).write.parquet(path + "_out")


if __name__ == "__main__":
    main(sys.argv[1])
