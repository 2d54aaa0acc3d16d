"""Pandas UDFs over batches: an iterator UDF and a grouped aggregate."""
from typing import Iterator

import pandas as pd
from pyspark.sql.functions import pandas_udf


@pandas_udf("double")
def fahrenheit(batches: Iterator[pd.Series]) -> Iterator[pd.Series]:
    for celsius in batches:
        yield celsius * 9.0 / 5.0 + 32.0


@pandas_udf("double")
def spread(values: pd.Series) -> float:
    return float(values.max() - values.min())


def main(readings):
    readings.select(fahrenheit("celsius")).show()
    readings.groupBy("sensor").agg(spread("celsius")).show()
