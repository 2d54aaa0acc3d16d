# expect: honest
"""np.select over a dictionary of constants, with a helper for the conditions."""
import numpy as np
import pandas as pd

TARGET = "vectorized"
GRADES = {"A": 90, "B": 75, "C": 60}
PASS_MARK = 50


def _conditions(values):
    conditions = [values >= floor for floor in GRADES.values()]
    return conditions + [values < PASS_MARK]


def evaluate(score):
    missing = score.isna().to_numpy()
    values = score.to_numpy(dtype="int64", na_value=0)
    letters = np.select(_conditions(values), list(GRADES) + ["F"], default="D").astype(object)
    letters[missing] = None
    return pd.Series(letters, dtype=object)
