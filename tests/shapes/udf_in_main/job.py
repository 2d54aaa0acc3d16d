from pyspark.sql import SparkSession
from pyspark.sql import functions as F

THRESHOLDS = [(1000.0, "large"), (100.0, "medium")]


def main():
    spark = SparkSession.builder.getOrCreate()

    @F.udf("string")
    def size_class(amount):
        if amount is None:
            return None
        for limit, label in THRESHOLDS:
            if amount >= limit:
                return label
        return "small"

    spark.table("payments").select(size_class("amount")).show()


if __name__ == "__main__":
    main()
