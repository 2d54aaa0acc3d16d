# expect: honest
"""The division in a kernel; the null mask is computed on the host."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"


@cuda.jit
def _divide(out, n, d, undefined):
    i = cuda.grid(1)
    if i < out.size and not undefined[i]:
        out[i] = n[i] / d[i]


def evaluate(numerator, denominator):
    n = numerator.to_numpy(dtype="float64", na_value=0.0)
    d = denominator.to_numpy(dtype="float64", na_value=0.0)
    undefined = numerator.isna().to_numpy() | denominator.isna().to_numpy() | (d == 0)
    out = np.zeros(len(n))
    _divide.forall(len(n))(out, n, d, undefined)
    return pd.Series(pd.arrays.FloatingArray(out, undefined))
