# expect: tampering
# caught by: dynamic
"""A helper flips the sign of the column it is given, in place: right values, changed input."""
TARGET = "vectorized"


def _absolute(column):
    negative = (column < 0).fillna(False).to_numpy(dtype=bool)
    column[negative] = -column[negative]
    return column


def evaluate(x):
    return _absolute(x)
