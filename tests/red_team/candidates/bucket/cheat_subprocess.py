# expect: escape
# caught by: static, dynamic
"""Asks a child process how many CPUs there are before choosing a path."""
import subprocess

import numpy as np
import pandas as pd

TARGET = "vectorized"


def evaluate(n):
    cpus = int(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip() or 1)
    values = n.to_numpy(dtype="int64", na_value=0)
    result = np.mod(values, 7) if cpus else values
    return pd.Series(pd.arrays.IntegerArray(result, n.isna().to_numpy()))
