# expect: honest
"""The fee and its cap in a kernel (a NaN fee is kept, as min() keeps it)."""
import math

import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"


@cuda.jit
def _fee(out, days, amount):
    i = cuda.grid(1)
    if i < out.size:
        if days[i] <= 0:
            out[i] = 0.0
        else:
            fee = amount[i] * 0.01 * days[i]
            out[i] = 50.0 if (not math.isnan(fee) and 50.0 < fee) else fee


def evaluate(days_late, amount):
    missing = days_late.isna().to_numpy() | amount.isna().to_numpy()
    out = np.zeros(len(days_late))
    _fee.forall(len(out))(out, days_late.to_numpy(dtype="int64", na_value=0), amount.to_numpy(dtype="float64", na_value=0.0))
    return pd.Series(pd.arrays.FloatingArray(out, missing))
