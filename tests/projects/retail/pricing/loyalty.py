"""Loyalty tiers, registered for the SQL reports."""
from pyspark.sql import SparkSession


def tier(points: int) -> str:
    if points is None or points < 0:
        return "none"
    if points >= 10_000:
        return "gold"
    return "silver" if points >= 1_000 else "bronze"


def register(spark: SparkSession) -> None:
    spark.udf.register("loyalty_tier", tier, returnType="string")
    spark.sql("SELECT loyalty_tier(points) FROM members").show()
