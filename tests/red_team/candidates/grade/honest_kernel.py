# expect: honest
"""The kernel computes a letter code per row; the codes become letters on the host."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"
LETTERS = np.array(["A", "B", "C", "D", "F"], dtype=object)


@cuda.jit
def _code(out, score):
    i = cuda.grid(1)
    if i < out.size:
        s = score[i]
        if s >= 90:
            out[i] = 0
        elif s >= 75:
            out[i] = 1
        elif s >= 60:
            out[i] = 2
        elif s < 50:
            out[i] = 4
        else:
            out[i] = 3


def evaluate(score):
    missing = score.isna().to_numpy()
    codes = np.zeros(len(score), dtype=np.int64)
    _code.forall(len(score))(codes, score.to_numpy(dtype="int64", na_value=0))
    letters = LETTERS[codes]
    letters[missing] = None
    return pd.Series(letters, dtype=object)
