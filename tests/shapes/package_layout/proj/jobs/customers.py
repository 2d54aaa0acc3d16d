from pyspark.sql import functions as F

from proj.lib import text
from ..lib.text import squash


@F.udf("string")
def display_name(raw: str) -> str:
    if raw is None:
        return None
    return squash(raw).title()


@F.udf("string")
def initials(raw: str) -> str:
    if raw is None:
        return None
    return "".join(part[0] for part in text.squash(raw).split(" ") if part)


def run(customers):
    return customers.select(display_name("name").alias("name"), initials("name").alias("initials"))
