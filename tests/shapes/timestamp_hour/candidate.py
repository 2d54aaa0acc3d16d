from pyspark.sql import functions as F

TARGET = "sql"


def build(ts):
    return F.hour(ts)
