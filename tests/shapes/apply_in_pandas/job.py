import pandas as pd


def normalise(group: pd.DataFrame) -> pd.DataFrame:
    group["amount"] = group["amount"] / group["amount"].sum()
    return group


def main(orders):
    return orders.groupBy("customer").applyInPandas(normalise, schema="customer string, amount double")
