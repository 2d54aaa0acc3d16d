from pyspark.sql import functions as F

TARGET = "sql"


def build(currency):
    rates = F.create_map(F.lit("EUR"), F.lit(1.0), F.lit("USD"), F.lit(0.92), F.lit("GBP"), F.lit(1.17))
    return rates[F.upper(currency)]
