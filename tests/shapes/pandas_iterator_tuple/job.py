from typing import Iterator, Tuple

import pandas as pd
from pyspark.sql.functions import PandasUDFType, pandas_udf


@pandas_udf("double", PandasUDFType.SCALAR_ITER)
def weighted(batches: Iterator[Tuple[pd.Series, pd.Series]]) -> Iterator[pd.Series]:
    for value, weight in batches:
        yield value * weight.fillna(1.0)
