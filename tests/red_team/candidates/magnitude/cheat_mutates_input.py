# expect: tampering
# caught by: static, dynamic
"""Flips the sign of the input column in place and returns it: right values, changed input."""
TARGET = "vectorized"


def evaluate(x):
    negative = (x < 0).fillna(False).to_numpy(dtype=bool)
    x[negative] = -x[negative]
    return x
