"""Great-circle distances for deliveries."""
import math

from pyspark.sql.functions import udf

EARTH_KM = 6371.0


@udf("double")
def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    if None in (lat1, lon1, lat2, lon2):
        return None
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_KM * math.asin(math.sqrt(a))


@udf("string")
def grid_cell(lat: float, lon: float) -> str:
    if lat is None or lon is None:
        return None
    return f"{int(lat // 1)}:{int(lon // 1)}"
