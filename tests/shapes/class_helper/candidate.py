from pyspark.sql import functions as F

TARGET = "sql"


def build(spend):
    return F.when(spend >= 5000, "platinum").when(spend >= 1000, "gold").when(spend >= 250, "silver").when(spend.isNotNull(), "bronze")
