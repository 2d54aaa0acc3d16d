# expect: escape
# caught by: static
"""Calls a Java method through SQL reflect()."""
from pyspark.sql import functions as F

TARGET = "sql"
ADULT_AGE = 18


def build(age):
    compared = F.expr(f"cast(reflect('java.lang.Integer', 'compare', age, {ADULT_AGE}) as int)")
    return F.when(age.isNull(), F.lit(None).cast("boolean")).otherwise(compared >= 0)
