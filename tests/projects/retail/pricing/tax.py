"""Tax rules by region."""
from decimal import Decimal

from pyspark.sql.functions import udf

RATES = {"CA": Decimal("0.0725"), "NY": Decimal("0.04"), "TX": Decimal("0.0625")}


@udf("decimal(10,2)")
def sales_tax(amount: Decimal, region: str) -> Decimal:
    if amount is None:
        return None
    rate = RATES.get(region, Decimal("0"))
    return (amount * rate).quantize(Decimal("0.01"))


@udf("interval day to second")
def grace_period(days: int):
    return None
