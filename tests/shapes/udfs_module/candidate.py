from pyspark.sql import functions as F

TARGET = "sql"


def build(lat1, lon1, lat2, lon2):
    return (F.abs(lat2 - lat1) + F.abs(lon2 - lon1)) * F.lit(111.32)
