# expect: honest
"""min(fee, cap) in Python returns a NaN fee unchanged, while Spark orders NaN above every number: say so."""
from pyspark.sql import functions as F

TARGET = "sql"
DAILY_RATE = 0.01
MAX_LATE_FEE = 50.0


def build(days_late, amount):
    fee = amount * DAILY_RATE * days_late
    capped = F.when(F.isnan(fee), fee).when(F.lit(MAX_LATE_FEE) < fee, F.lit(MAX_LATE_FEE)).otherwise(fee)
    return (
        F.when(days_late.isNull() | amount.isNull(), F.lit(None).cast("double"))
        .when(days_late <= 0, F.lit(0.0))
        .otherwise(capped)
    )
