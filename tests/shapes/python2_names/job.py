"""A job ported from Python 2: the unicode() branch is never taken for a string, except by null."""
from pyspark.sql.functions import udf


@udf("string")
def shout(s: str) -> str:
    if isinstance(s, str):
        return s.upper()
    return unicode(s).upper()  # noqa: F821


def main(spark, path):
    spark.read.parquet(path).select(shout("name")).show()
