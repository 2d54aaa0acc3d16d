from pyspark.sql.functions import udf
from pyspark.sql.types import IntegerType


def hour_of(ts):
    return None if ts is None else ts.hour


hour_udf = udf(hour_of, IntegerType())
