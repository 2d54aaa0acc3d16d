"""SQL-facing job: UDFs registered by name and used from SQL text."""
from pyspark.sql import SparkSession
from pyspark.sql.functions import udf


def mask_email(email: str) -> str:
    if email is None or "@" not in email:
        return email
    user, domain = email.split("@", 1)
    return user[:1] + "***@" + domain


def main():
    spark = SparkSession.builder.getOrCreate()
    spark.udf.register("mask_email", mask_email, "string")
    is_vip = udf(lambda total: total is not None and total > 1000, "boolean")
    spark.sql("SELECT mask_email(email) AS email FROM customers").show()
    spark.table("orders").select(is_vip("total")).show()
    spark.sql("SELECT id, mask_email(backup_email) FROM customers").show()
