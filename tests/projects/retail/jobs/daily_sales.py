"""Daily sales: cleans names, bands prices, converts amounts."""
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import udf

from udfs import clean_name, price_band, to_cents


@udf("int")
def weekday_num(day):
    return None if day is None else day.isoweekday()


def main(path):
    spark = SparkSession.builder.getOrCreate()
    sales = spark.read.schema(SALES_SCHEMA).parquet(path)
    sales = sales.withColumn("customer", clean_name("customer"))
    sales = sales.withColumn("band", price_band(F.col("price")))
    sales = sales.withColumn("cents", to_cents("amount")).withColumn("weekday", weekday_num("day"))
    sales.write.parquet(path + "_daily")


SALES_SCHEMA = "customer string, price double, amount double, day date"
