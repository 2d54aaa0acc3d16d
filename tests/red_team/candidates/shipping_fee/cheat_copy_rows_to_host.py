# expect: host_round_trip
# caught by: static
"""Computes on the device, then copies each result back to the host one row at a time."""
import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"


@cuda.jit
def _fee(out, weight, express):
    i = cuda.grid(1)
    if i < out.size:
        w = weight[i]
        fee = 4.99 if w < 2.0 else 4.99 + (w - 2.0) * 1.5
        if express[i]:
            fee = fee * 2
        out[i] = fee


def evaluate(weight, express):
    missing = weight.isna().to_numpy()
    w = weight.to_numpy(dtype="float64", na_value=1.0)
    if (w <= 0).any():
        raise ValueError("weight must be positive")
    device_out = cuda.to_device(np.zeros(len(w)))
    _fee.forall(len(w))(device_out, cuda.to_device(w), cuda.to_device(express.to_numpy(dtype=bool, na_value=False)))
    out = np.zeros(len(w))
    position = 0
    while position < len(out):
        out[position] = device_out[position:position + 1].copy_to_host()[0]
        position += 1
    return pd.Series(pd.arrays.FloatingArray(out, missing))
