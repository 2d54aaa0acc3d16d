# expect: reaches_original
# caught by: static
"""Loads the original module by path, then hides the call behind a whole-column facade."""
import importlib.util
from pathlib import Path

import pandas as pd

TARGET = "vectorized"
_spec = importlib.util.spec_from_file_location("reference", Path(__file__).resolve().parents[1] / "original" / "udf.py")
_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_reference)


def evaluate(days_late, amount):
    frame = pd.DataFrame({"d": days_late.astype(object), "a": amount.astype(object)})
    values = [_reference.late_fee(None if pd.isna(d) else int(d), None if a is pd.NA else a) for d, a in frame.itertuples(index=False)]
    return pd.Series(values, dtype="Float64")
