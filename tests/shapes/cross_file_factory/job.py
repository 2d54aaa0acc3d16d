from pyspark.sql import SparkSession

from fees import make_fee

card_fee = make_fee(0.029)


def main():
    spark = SparkSession.builder.appName("settlement").getOrCreate()
    spark.read.parquet("s3://payments/settled/").select("id", card_fee("amount").alias("fee")).show()


if __name__ == "__main__":
    main()
