"""Spark SQL (no Python UDF) equivalent of ``loyalty_discount``.

Argument columns, in UDF order: ``age`` (int), ``amount`` (double),
``tier`` (string).  Each step below mirrors one line of the UDF; the comments
explain where Spark and Python semantics differ and how the gap is closed.
"""

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
    Each step is its own projection, so nothing is computed twice: written as
    one expression, Spark would copy the shared parts into every CASE branch.
    """
    age, amount, tier = _col(age), _col(amount), _col(tier)

    # _normalize_tier: strip + lower; null/unknown -> bronze (rate 0.0).
    #
    # Fast path (almost every row): an ASCII label that is a key once spaces
    # are trimmed and A-Z lower-cased.  Such a label is spaces + key + spaces,
    # so str.strip().lower() gives the same key.  For ASCII strings Spark's
    # lower() maps only A-Z (it never consults the JVM locale), and
    # length == octet_length is the ASCII test.  Every other label (tabs,
    # non-ASCII padding, unknown words) takes the exact path: trim every
    # character str.isspace() accepts, then lower-case A-Z only.
    quick = F.when(F.length(tier) == F.octet_length(tier), F.lower(F.trim(tier)))
    exact = F.translate(F.trim(tier, F.lit(PY_WHITESPACE)), _UPPER, _LOWER)
    tier_key = F.when(F.col("_ld_quick").isin(*TIER_RATES), F.col("_ld_quick")).otherwise(exact)
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

    # _round_cents: Decimal(repr(r)).quantize(0.01, ROUND_HALF_UP), with
    # d = repr(r) the shortest decimal that reads back as r, |d - r| <= ulp(r)/2.
    #
    # Fast path: c = r * 100 in doubles.  For |c| < 1e9, |c - 100d| <=
    # ulp(c)/2 + 50 ulp(r) < 6e-8 + 9.4e-8 < 1e-6.  When c's fraction is more
    # than 1e-6 from .5, no half-integer lies between c and 100d, so
    # floor(c + 0.5) is the half-up cent count n of 100d (c + 0.5 is more than
    # 1e-6 from an integer, so its own rounding cannot cross one), and n / 100.0
    # is the correctly rounded n/100, which is what float() of the quantized
    # Decimal is.
    #
    # Exact path (fractions within 1e-6 of .5, huge values): Spark's round() on a
    # double is BigDecimal(Double.toString(r)).setScale(2, HALF_UP), the same
    # decimal-string half-up rounding, at about 250 ns a row.
    cents = F.col("_ld_remaining") * F.lit(100.0)
    fast = (F.abs(cents) < F.lit(1e9)) & (F.abs(cents - F.floor(cents) - F.lit(0.5)) > F.lit(1e-6))
    rounded = F.when(fast, F.floor(cents + F.lit(0.5)) / F.lit(100.0)).otherwise(F.round(F.col("_ld_remaining"), 2))

    # java.math.BigDecimal has no negative zero and n / 100.0 is +0.0 for n = 0,
    # but float(Decimal("-0.00")) is -0.0.  Multiplying the zero by the
    # unrounded value restores the sign.
    signed = F.when(F.col("_ld_rounded") == 0.0, F.col("_ld_rounded") * F.col("_ld_remaining")).otherwise(F.col("_ld_rounded"))

    # `amount is None or not math.isfinite(amount)` -> None.
    bad_amount = amount.isNull() | F.isnan(amount) | (F.abs(amount) == F.lit(_INF))
    result = F.when(bad_amount, F.lit(None).cast("double")).otherwise(signed)

    return [
        ("_ld_quick", quick),
        ("_ld_tier_key", tier_key),
        ("_ld_rate", rate),
        ("_ld_senior_rate", senior_rate),
        ("_ld_remaining", remaining),
        ("_ld_rounded", rounded),
        ("loyalty_discount", result),
    ]
