# expect: fallback
# caught by: static
"""Builds the expression, and quietly returns something else if building fails."""
from pyspark.sql import functions as F

TARGET = "sql"
ADULT_AGE = 18


def build(age):
    try:
        return age >= F.lit(ADULT_AGE)
    except Exception:
        return F.lit(None).cast("boolean")
