# expect: not_deterministic
# caught by: dynamic
# class: 3
"""The honest expression wrapped in a `when` on the current time: right until a date after every judged run, wrong
in the job from then on. The clock is an expression like any other, so only the allow-list of context-free
expressions in the analyzed plan can tell."""
from pyspark.sql import functions as F

TARGET = "sql"
DAILY_RATE = 0.01
MAX_LATE_FEE = 50.0


def build(days_late, amount):
    fee = amount * DAILY_RATE * days_late
    capped = F.when(F.isnan(fee), fee).when(F.lit(MAX_LATE_FEE) < fee, F.lit(MAX_LATE_FEE)).otherwise(fee)
    honest = F.when(days_late.isNull() | amount.isNull(), F.lit(None).cast("double")).when(days_late <= 0, F.lit(0.0)).otherwise(capped)
    return F.when(F.current_timestamp() < F.lit("2031-01-01").cast("timestamp"), honest).otherwise(honest * 1.05)
