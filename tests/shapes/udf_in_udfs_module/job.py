from pyspark.sql import SparkSession

from udfs import is_valid_email

spark = SparkSession.builder.appName("contacts").getOrCreate()
contacts = spark.read.json("contacts.json")
contacts.filter(is_valid_email("email")).write.parquet("valid")
