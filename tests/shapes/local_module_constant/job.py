from pyspark.sql.functions import udf

from patterns import SALARY_RE


@udf("string")
def strip_salary(text: str) -> str:
    return None if text is None else SALARY_RE.sub("", text)


def main(spark, path):
    spark.read.csv(path, header=True).select(strip_salary("salary")).show()
