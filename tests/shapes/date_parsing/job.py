"""Signups per hour of the day, from the raw event log's timestamp strings."""

from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

# The log writes every timestamp like '2015-04-21 16:56:08 UTC'.
LOG_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


@F.udf(returnType=IntegerType())
def signup_hour(created_at):
    if created_at is None:
        return None
    stamp = datetime.strptime(created_at, LOG_FORMAT)
    return stamp.hour


def main():
    spark = SparkSession.builder.appName("signups").getOrCreate()
    events = spark.read.json("s3://events/signups/")
    events.groupBy(signup_hour("created_at").alias("hour")).count().show()


if __name__ == "__main__":
    main()
