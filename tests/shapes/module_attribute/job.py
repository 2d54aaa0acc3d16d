from pyspark.sql.functions import udf

import settings


@udf("string")
def age_band(age: int) -> str:
    if age is None:
        return None
    if age < settings.MIN_AGE:
        return "minor"
    if age > settings.MAX_AGE:
        return "senior"
    return "adult"


def main(spark):
    spark.table("people").select(age_band("age")).write.parquet(settings.OUTPUT)
