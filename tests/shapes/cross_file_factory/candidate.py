"""amount * 0.029 + 0.30, as the factory made it for the card rate; a NaN stays a NaN, a null a null."""
import pandas as pd

TARGET = "vectorized"


def evaluate(amount):
    values = amount.to_numpy(dtype="float64", na_value=0.0)
    return pd.Series(pd.arrays.FloatingArray(values * 0.029 + 0.30, amount.isna().to_numpy()))
