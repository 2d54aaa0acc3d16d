import datetime

from pyspark.sql import SparkSession


def parse_date(text):
    if text is None:
        return None
    try:
        return datetime.datetime.strptime(text.strip(), "%Y-%m-%d").date()
    except ValueError:
        return None


def main():
    spark = SparkSession.builder.getOrCreate()
    spark.udf.register(name="custom_to_date", f=parse_date, returnType="date")
    spark.sql("SELECT custom_to_date(order_day) AS day FROM orders").show()
