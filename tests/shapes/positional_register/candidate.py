from pyspark.sql import functions as F

TARGET = "sql"


def build(day):
    # Spark counts Sunday as 1 and Saturday as 7
    return F.dayofweek(day).isin(1, 7)
