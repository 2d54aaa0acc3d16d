"""A plausible but wrong one-expression rewrite of ``loyalty_discount``.

It reads like the UDF, and it is what a quick conversion usually looks like, but it
differs from the original as Spark runs it: Spark's ``trim`` strips only spaces where
Python's ``str.strip`` strips tabs and Unicode whitespace, a NaN or infinite amount gives
NaN instead of null, and ``round`` drops the sign of a negative zero. The demo and the
tests use it to show the behaviour cases catching a conversion like this.
"""

from pyspark.sql import functions as F

TARGET = "sql"

RATES = F.create_map(
    F.lit("silver"), F.lit(0.05),
    F.lit("gold"), F.lit(0.10),
    F.lit("platinum"), F.lit(0.15),
)


def build(age, amount, tier):
    rate = F.coalesce(RATES[F.lower(F.trim(tier))], F.lit(0.0))
    rate = F.when(age >= 65, rate + 0.05).otherwise(rate)
    return F.round(amount - F.least(amount * rate, F.lit(25.0)), 2)
