# expect: row_at_a_time
# caught by: static, dynamic
"""A kernel launched once per row from a Python loop."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"
LETTERS = np.array(["A", "B", "C", "D", "F"], dtype=object)


@cuda.jit
def _code(out, score):
    s = score[0]
    if s >= 90:
        out[0] = 0
    elif s >= 75:
        out[0] = 1
    elif s >= 60:
        out[0] = 2
    elif s < 50:
        out[0] = 4
    else:
        out[0] = 3


def evaluate(score):
    values = score.to_numpy(dtype="int64", na_value=0)
    codes = np.zeros(len(values), dtype=np.int64)
    for i in range(len(score)):
        _code[1, 1](codes[i:i + 1], values[i:i + 1])
    letters = LETTERS[codes]
    letters[score.isna().to_numpy()] = None
    return pd.Series(letters, dtype=object)
