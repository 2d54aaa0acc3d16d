# Databricks notebook source
# MAGIC %md
# MAGIC # Exploring returns

# COMMAND ----------

from pyspark.sql.functions import udf

# COMMAND ----------

@udf("boolean")
def is_return(code: str) -> bool:
    return code is not None and code.upper().startswith("R")

# COMMAND ----------

@udf("int")
def basket_size(items: list) -> int:
    count = 0
    for item in items or []:
        if item:
            count += 1
    return count

# COMMAND ----------

display(spark.table("returns").select(is_return("code"), basket_size("items")))  # noqa: F821
