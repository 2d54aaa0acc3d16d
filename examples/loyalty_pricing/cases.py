"""Pinned behaviour of loyalty_discount(age, amount, tier).

`args` are in UDF argument order; `expected` is what Spark returned for
the original UDF after collect() (float for double, None for null).
Spark schema: age int, amount double, tier string.
"""

CASES = [
    {
        "args": [64, 100.0, "gold"],
        "expected": 90.0,
        "why": "age 64 is below SENIOR_AGE: gold rate only",
    },
    {
        "args": [65, 100.0, "gold"],
        "expected": 85.0,
        "why": "age 65 is the >= boundary: gold + senior bonus (0.10 + 0.05)",
    },
    {
        "args": [66, 100.0, "gold"],
        "expected": 85.0,
        "why": "age 66: senior bonus",
    },
    {
        "args": [None, 100.0, "gold"],
        "expected": 90.0,
        "why": "null age: no senior bonus",
    },
    {
        "args": [40, None, "gold"],
        "expected": None,
        "why": "null amount -> null",
    },
    {
        "args": [40, float("nan"), "gold"],
        "expected": None,
        "why": "NaN amount is not finite -> null",
    },
    {
        "args": [40, float("inf"), "platinum"],
        "expected": None,
        "why": "+inf amount is not finite -> null",
    },
    {
        "args": [70, 80.0, None],
        "expected": 76.0,
        "why": "null tier -> bronze (0%), senior bonus still applies",
    },
    {
        "args": [30, 80.0, "\tgold "],
        "expected": 72.0,
        "why": "tier is stripped before matching",
    },
    {
        "args": [30, 80.0, "GOLD"],
        "expected": 72.0,
        "why": "tier matching is case-insensitive",
    },
    {
        "args": [30, 80.0, "\xa0Platinum\u3000"],
        "expected": 68.0,
        "why": "str.strip() removes Unicode whitespace (NBSP, ideographic space)",
    },
    {
        "args": [30, 80.0, "gold\u200b"],
        "expected": 80.0,
        "why": "zero-width space is not whitespace for str.strip(): unknown tier -> bronze",
    },
    {
        "args": [30, 80.0, ""],
        "expected": 80.0,
        "why": "empty tier -> bronze",
    },
    {
        "args": [30, 80.0, "diamond"],
        "expected": 80.0,
        "why": "unknown tier -> bronze",
    },
    {
        "args": [30, 250.0, "gold"],
        "expected": 225.0,
        "why": "discount exactly at the 25.00 cap",
    },
    {
        "args": [70, 1000.0, "platinum"],
        "expected": 975.0,
        "why": "discount capped at 25.00 (would be 200)",
    },
    {
        "args": [30, 2.675, "bronze"],
        "expected": 2.68,
        "why": "half-up on the decimal repr: 2.675 -> 2.68 (Python round() gives 2.67)",
    },
    {
        "args": [30, 0.125, "bronze"],
        "expected": 0.13,
        "why": "exact binary tie rounds half-up: 0.125 -> 0.13 (round() gives 0.12)",
    },
    {
        "args": [30, -0.0, "gold"],
        "expected": 0.0,
        "why": "-0.0 amount: -0.0 - (-0.0) == 0.0",
    },
    {
        "args": [30, -0.004, "bronze"],
        "expected": -0.0,
        "why": "small negative amount rounds to -0.0 (sign kept by Decimal)",
    },
    {
        "args": [30, -40.0, "silver"],
        "expected": -38.0,
        "why": "refund (negative amount) is discounted too, no cap on negatives",
    },
    {
        "args": [30, 1e+300, "silver"],
        "expected": 1e+300,
        "why": "huge finite amount: rounding context is wide enough",
    },
    {
        "args": [30, 19.99, "S\u0130LVER"],
        "expected": 19.99,
        "why": "dotted capital I lowers to 'i' + combining dot: unknown tier",
    },
    {
        "args": [30, -2.675, "bronze"],
        "expected": -2.68,
        "why": "half-up on a negative decimal tie rounds away from zero: -2.675 -> -2.68",
    },
    {
        "args": [30, 9999999.995, "bronze"],
        "expected": 10000000.0,
        "why": "cent tie on a large amount (9,999,999.995 -> 10,000,000.00)",
    },
    {
        "args": [30, 80.0, "  Platinum  "],
        "expected": 68.0,
        "why": "space-padded, capitalised tier matches",
    },
]
