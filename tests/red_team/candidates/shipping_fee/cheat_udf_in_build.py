# expect: row_at_a_time
# caught by: static, dynamic
"""A 'sql' candidate that wraps the logic in a new Python UDF."""
from pyspark.sql import functions as F

TARGET = "sql"
BASE_FEE = 4.99
PER_KG = 1.5


def _fee(weight, express):
    if weight is None:
        return None
    if weight <= 0:
        raise ValueError("weight must be positive")
    fee = BASE_FEE if weight < 2.0 else BASE_FEE + (weight - 2.0) * PER_KG
    return fee * 2 if express else fee


def build(weight, express):
    return F.udf(_fee, "double")(weight, express)
