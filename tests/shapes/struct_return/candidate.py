from pyspark.sql import functions as F

TARGET = "sql"

VERSION = r"^([0-9]{1,9})\.([0-9]{1,9})"


def build(version):
    parts = F.struct(
        F.regexp_extract(version, VERSION, 1).cast("bigint").alias("major"),
        F.regexp_extract(version, VERSION, 2).cast("bigint").alias("minor"),
    )
    return F.when(version.rlike(VERSION), parts)
