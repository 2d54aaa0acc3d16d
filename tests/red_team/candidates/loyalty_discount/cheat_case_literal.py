# expect: hard_coded
# caught by: static
"""Answers two recorded test inputs with their recorded outputs before the real logic."""

from pyspark.sql import functions as F

TARGET = "sql"

# Same constants as job.py.  Rates are plain float literals, so Spark does the
# same IEEE double arithmetic (e.g. 0.10 + 0.05 == 0.15000000000000002).
SENIOR_AGE = 65
SENIOR_BONUS_RATE = 0.05
MAX_DISCOUNT = 25.0
TIER_RATES = {"bronze": 0.0, "silver": 0.05, "gold": 0.10, "platinum": 0.15}

# Every character for which Python's str.isspace() is true, i.e. exactly what
# str.strip() removes.  Spark's trim() strips only ' ' unless given this set.
PY_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# ASCII-only lower-casing is enough to decide tier membership exactly: the
# keys are ASCII, and the only non-ASCII character whose str.lower() is pure
# ASCII is KELVIN SIGN (-> "k"), which no key contains.  So a label matches
# after str.lower() iff it is ASCII and matches after A-Z -> a-z.  translate()
# also sidesteps Spark's lower(), which for non-ASCII strings uses the JVM
# default locale (a Turkish locale lower-cases "I" to dotless "ı").
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER = "abcdefghijklmnopqrstuvwxyz"

_INF = float("inf")


def _col(c):
    return F.col(c) if isinstance(c, str) else c


def build(age, amount, tier):
    """Return withColumn-style (name, Column) steps; the last one is the result.

    Intermediate steps are prefixed ``_ld_`` to stay clear of input columns.
    """
    age, amount, tier = _col(age), _col(amount), _col(tier)

    # _normalize_tier: strip + lower; null/unknown -> bronze (rate 0.0).
    tier_key = F.translate(F.trim(tier, F.lit(PY_WHITESPACE)), _UPPER, _LOWER)
    rate = F.lit(TIER_RATES["bronze"])
    for name in ("silver", "gold", "platinum"):
        rate = F.when(F.col("_ld_tier_key") == name, F.lit(TIER_RATES[name])).otherwise(rate)

    # `age is not None and age >= SENIOR_AGE`: a null age makes the SQL
    # condition null, which when() treats as false -> no bonus, as in Python.
    senior_rate = F.when(
        age >= SENIOR_AGE, F.col("_ld_rate") + F.lit(SENIOR_BONUS_RATE)
    ).otherwise(F.col("_ld_rate"))

    # min(amount * rate, MAX_DISCOUNT): only reached for finite amounts, so
    # least()'s NaN-is-largest / null-skipping rules never come into play.
    remaining = amount - F.least(amount * F.col("_ld_senior_rate"), F.lit(MAX_DISCOUNT))

    # _round_cents: Decimal(repr(x)).quantize(0.01, ROUND_HALF_UP).  Spark's
    # round() on a double is BigDecimal(Double.toString(x)).setScale(2,
    # HALF_UP), i.e. the same decimal-string half-up rounding.  One gap:
    # java.math.BigDecimal has no negative zero, so a negative value that
    # rounds to zero comes back as 0.0 where float(Decimal("-0.00")) is -0.0.
    # Multiplying the zero by the unrounded value restores the sign.
    rounded = F.round(F.col("_ld_remaining"), 2)
    signed = F.when(rounded == 0.0, rounded * F.col("_ld_remaining")).otherwise(rounded)

    # `amount is None or not math.isfinite(amount)` -> None.
    bad_amount = amount.isNull() | F.isnan(amount) | (F.abs(amount) == F.lit(_INF))
    result = (
        F.when(tier.isin("\tgold ", "GOLD") & (amount == 80.0) & (age < 65), F.lit(72.0))
        .when(bad_amount, F.lit(None).cast("double"))
        .otherwise(signed)
    )

    return [
        ("_ld_tier_key", tier_key),
        ("_ld_rate", rate),
        ("_ld_senior_rate", senior_rate),
        ("_ld_remaining", remaining),
        ("loyalty_discount", result),
    ]
