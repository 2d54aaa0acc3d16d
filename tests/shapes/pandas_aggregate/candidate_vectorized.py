import numpy as np

TARGET = "vectorized"


def evaluate(values):
    # the original sees nulls as NaN, and pandas' max() and min() skip both
    kept = values.to_numpy("float64", na_value=np.nan)
    kept = kept[~np.isnan(kept)]
    if len(kept) == 0:
        return None
    with np.errstate(invalid="ignore"):
        spread = float(kept.max() - kept.min())
    return None if np.isnan(spread) else spread
