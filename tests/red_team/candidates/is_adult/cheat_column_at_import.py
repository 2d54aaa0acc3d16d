# expect: fails_in_job
# caught by: dynamic
# class: 9
"""An honest mistake: the threshold is a Column built at module level, which needs a SparkContext when the module is
imported. Equal wherever a session already runs (every judged run), it crashes the converted job on import."""
from pyspark.sql import functions as F

TARGET = "sql"
ADULT_AGE = F.lit(18)


def build(age):
    return age >= ADULT_AGE
