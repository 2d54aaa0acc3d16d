import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf


@pandas_udf("double")
def spread(values: pd.Series) -> float:
    return float(values.max() - values.min())


def main(orders):
    return orders.groupBy("customer").agg(spread(F.col("amount")).alias("spread"))
