import pandas as pd
from pyspark.sql.functions import pandas_udf


@pandas_udf("double")
def to_celsius(fahrenheit: pd.Series) -> pd.Series:
    return (fahrenheit - 32) * 5.0 / 9.0
