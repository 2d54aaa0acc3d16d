from pyspark.sql import functions as F
from pyspark.sql.types import StringType

normalize_city = F.udf(lambda s: s.strip().lower() if s else None, StringType())


def run(addresses):
    return addresses.withColumn("city", normalize_city(F.col("city")))
