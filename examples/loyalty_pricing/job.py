"""Nightly loyalty pricing batch job.

Reads an orders extract (parquet, or CSV with a header), computes the
discounted order amount for every row with the ``loyalty_discount`` UDF and
writes the result as parquet.

Usage::

    spark-submit job.py INPUT_PATH OUTPUT_PATH

Input columns used: ``age`` (int), ``amount`` (double), ``tier`` (string).
"""

import logging
import math
import sys
from decimal import ROUND_HALF_UP, Context, Decimal

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.functions import udf
from pyspark.sql.types import DoubleType

logging.basicConfig(
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)
log = logging.getLogger("loyalty_pricing")

# --- pricing rules ----------------------------------------------------------

SENIOR_AGE = 65            # customers this old or older get the senior bonus
SENIOR_BONUS_RATE = 0.05   # added on top of the tier rate
MAX_DISCOUNT = 25.0        # a single order never gets more than this off
DEFAULT_TIER = "bronze"    # missing or unknown tiers are treated as bronze

TIER_RATES = {
    "bronze": 0.0,
    "silver": 0.05,
    "gold": 0.10,
    "platinum": 0.15,
}

# Money is rounded half-up to cents, the way finance reports it.  Python's
# round() would round the *binary* value half-to-even (round(2.675, 2) ==
# 2.67), so we go through the shortest decimal repr instead.  The context is
# wide enough (311 digits are needed for the largest double) that quantize()
# never raises InvalidOperation for a finite amount.
_CENT = Decimal("0.01")
_MONEY_CONTEXT = Context(prec=400, rounding=ROUND_HALF_UP)

# --- unrelated job plumbing (not used by the UDF) ---------------------------

OUTPUT_PARTITIONS = 8
REPORT_CURRENCY = "EUR"


def _output_path_for(run_date: str, base: str) -> str:
    """Partition-style output location used by the scheduler wrapper."""
    return f"{base.rstrip('/')}/run_date={run_date}"


# --- helpers used by the UDF ------------------------------------------------


def _normalize_tier(tier):
    """Map a raw tier label to a key of TIER_RATES.

    Labels come from a CRM export with inconsistent casing and padding
    ("  Gold", "GOLD\\t"), so compare them stripped and lower-cased; anything
    missing or unrecognised falls back to DEFAULT_TIER.
    """
    if tier is None:
        return DEFAULT_TIER
    key = tier.strip().lower()
    return key if key in TIER_RATES else DEFAULT_TIER


def _tier_rate(tier):
    """Discount rate (0..1) for a raw tier label."""
    return TIER_RATES[_normalize_tier(tier)]


def _round_cents(value):
    """Round a float half-up to two decimals (see _CENT above)."""
    return float(Decimal(repr(value)).quantize(_CENT, context=_MONEY_CONTEXT))


# --- the UDF ----------------------------------------------------------------


@udf(returnType=DoubleType())
def loyalty_discount(age: int, amount: float, tier: str) -> float:
    """Order amount after the loyalty discount, rounded half-up to cents.

    * ``amount`` missing or not finite (NaN/inf from upstream joins) -> None.
    * ``tier`` missing/unknown -> DEFAULT_TIER; ``age`` missing -> no senior
      bonus.
    * Seniors (age >= SENIOR_AGE) get SENIOR_BONUS_RATE on top of the tier.
    * The discount itself is capped at MAX_DISCOUNT.
    """
    if amount is None or not math.isfinite(amount):
        return None
    rate = _tier_rate(tier)
    if age is not None and age >= SENIOR_AGE:
        rate += SENIOR_BONUS_RATE
    discount = min(amount * rate, MAX_DISCOUNT)
    return _round_cents(amount - discount)


# --- job entry point ----------------------------------------------------------


def main():
    if len(sys.argv) != 3:
        print(f"usage: {sys.argv[0]} INPUT_PATH OUTPUT_PATH", file=sys.stderr)
        return 2
    input_path, output_path = sys.argv[1], sys.argv[2]

    spark = SparkSession.builder.appName("loyalty_pricing").getOrCreate()
    try:
        if input_path.endswith(".csv"):
            orders = spark.read.csv(
                input_path,
                header=True,
                schema="order_id string, age int, amount double, tier string",
            )
        else:
            orders = spark.read.parquet(input_path)

        priced = orders.withColumn(
            "discounted_amount",
            loyalty_discount(F.col("age"), F.col("amount"), F.col("tier")),
        )
        priced.repartition(OUTPUT_PARTITIONS).write.mode("overwrite").parquet(output_path)
        log.info("wrote priced orders (%s) to %s", REPORT_CURRENCY, output_path)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
