from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType


def is_weekend(day):
    if day is None:
        return None
    return day.weekday() >= 5


if __name__ == "__main__":
    spark = SparkSession.builder.getOrCreate()
    spark.udf.register("is_weekend", is_weekend, BooleanType())
    spark.sql("SELECT order_id FROM orders WHERE is_weekend(order_day)").show()
