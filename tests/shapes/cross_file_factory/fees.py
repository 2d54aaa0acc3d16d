"""Fee UDFs the payment jobs share: each made for one rate."""
from pyspark.sql.functions import udf
from pyspark.sql.types import DoubleType

FIXED_FEE = 0.30


def make_fee(rate):
    def fee(amount):
        if amount is None:
            return None
        return amount * rate + FIXED_FEE

    return udf(fee, DoubleType())
