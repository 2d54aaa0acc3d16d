from pyspark.sql.functions import udf


class Tier:
    """Loyalty tiers by yearly spend."""

    LIMITS = ((5000, "platinum"), (1000, "gold"), (250, "silver"))

    @classmethod
    def of(cls, spend):
        for limit, name in cls.LIMITS:
            if spend >= limit:
                return name
        return "bronze"


@udf("string")
def tier(spend: int) -> str:
    return None if spend is None else Tier.of(spend)
