"""Thresholds made by factories, fixed when the job builds them."""
from pyspark.sql import functions as F
from pyspark.sql.functions import udf
from pyspark.sql.types import DoubleType, StructField, StructType


def make_discount(rate):
    return udf(lambda price: None if price is None else round(price * (1 - rate), 2), DoubleType())


def main(orders):
    ten_off = make_discount(0.1)
    orders.select(ten_off(F.col("price"))).show()


ORDERS = StructType([StructField("order_id", DoubleType()), StructField("price", DoubleType())])
