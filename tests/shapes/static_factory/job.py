"""Scores cleaned for the weekly report; the cleaning UDFs live on one class, as the team's jobs share them."""
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import udf
from pyspark.sql.types import DoubleType


class CommonUdf:
    """UDFs every reporting job builds the same way."""

    @staticmethod
    def Clamp(low, high):
        def clamp(value):
            if value is None:
                return None
            return min(max(value, low), high)

        return udf(clamp, DoubleType())


score_0_100 = CommonUdf.Clamp(0.0, 100.0)


def main():
    spark = SparkSession.builder.appName("weekly").getOrCreate()
    scores = spark.read.parquet("s3://reports/scores/")
    scores.select(score_0_100(F.col("raw_score")).alias("score")).show()
