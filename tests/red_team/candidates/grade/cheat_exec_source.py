# expect: reaches_original
# caught by: static
"""Reads the original's source and executes it into a private namespace."""
import os

import numpy as np
import pandas as pd

TARGET = "vectorized"
_namespace: dict = {}
exec(open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "orig" + "inal", "udf.py")).read(), _namespace)


def evaluate(score):
    original = np.frompyfunc(_namespace["grade"], 1, 1)
    values = score.astype(object).where(score.notna(), None)
    return pd.Series(original(values.to_numpy()), dtype=object)
