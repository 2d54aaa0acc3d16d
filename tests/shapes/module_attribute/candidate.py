from pyspark.sql import functions as F

TARGET = "sql"


def build(age):
    return F.when(age < 18, "minor").when(age > 65, "senior").when(age.isNotNull(), "adult")
