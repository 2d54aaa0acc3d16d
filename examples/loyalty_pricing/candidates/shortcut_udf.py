"""A shortcut, not a conversion: the UDF's own logic called row by row behind a vectorized entry point.

It gives the right answers, so the tests and byte_compare pass it; it does the same per-row
Python work as the original, which is what audit_candidate is for (rule `row_at_a_time`: the
loop in the source, and Python steps that grow with the rows when it runs).
"""

import math
from decimal import ROUND_HALF_UP, Context, Decimal

import numpy as np
import pandas as pd

TARGET = "vectorized"
SENIOR_AGE = 65
SENIOR_BONUS_RATE = 0.05
MAX_DISCOUNT = 25.0
TIER_RATES = {"bronze": 0.0, "silver": 0.05, "gold": 0.10, "platinum": 0.15}
_CENT = Decimal("0.01")
_MONEY_CONTEXT = Context(prec=400, rounding=ROUND_HALF_UP)


def _discount(age, amount, tier):
    if amount is None or not math.isfinite(amount):
        return None
    key = tier.strip().lower() if tier is not None else "bronze"
    rate = TIER_RATES.get(key, 0.0)
    if age is not None and age >= SENIOR_AGE:
        rate += SENIOR_BONUS_RATE
    discount = min(amount * rate, MAX_DISCOUNT)
    return float(Decimal(repr(amount - discount)).quantize(_CENT, context=_MONEY_CONTEXT))


def evaluate(age, amount, tier):
    rows = zip(age.astype(object), amount.astype(object), tier.astype(object))
    values = [_discount(*(None if v is pd.NA else v for v in row)) for row in rows]
    missing = np.array([v is None for v in values], dtype=bool)
    return pd.Series(pd.arrays.FloatingArray(np.array([0.0 if v is None else v for v in values], dtype="float64"), missing))
