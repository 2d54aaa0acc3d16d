"""Distance helpers shared by the delivery jobs."""
from pyspark.sql.functions import udf  # noqa: F401  (the jobs wrap these)

KM_PER_DEGREE = 111.32


def _span(a, b):
    return abs(b - a)


def grid_km(lat1, lon1, lat2, lon2):
    """City-block distance on a degree grid: good enough for routing buckets."""
    if None in (lat1, lon1, lat2, lon2):
        return None
    return (_span(lat1, lat2) + _span(lon1, lon2)) * KM_PER_DEGREE
