from pyspark.sql import functions as F

TARGET = "sql"


def build(x, y):
    return F.sqrt(x * x + y * y)
