"""Shared UDFs of the retail jobs."""
import pandas as pd
from pyspark.sql.functions import pandas_udf, udf
from pyspark.sql.types import LongType


@udf("string")
def clean_name(raw: str) -> str:
    if raw is None:
        return None
    return " ".join(part.capitalize() for part in raw.strip().split())


@udf(returnType="string")
def price_band(price: float) -> str:
    if price is None:
        return "unknown"
    if price < 10.0:
        return "low"
    return "mid" if price < 100.0 else "high"


def _to_cents(amount: float) -> int:
    return None if amount is None else int(round(amount * 100))


to_cents = udf(_to_cents, LongType())


@pandas_udf("double")
def zscore(values: pd.Series) -> pd.Series:
    return (values - 50.0) / 10.0
