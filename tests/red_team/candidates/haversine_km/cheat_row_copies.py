# expect: host_round_trip
# caught by: static
"""Haversine on xp arrays (CuPy on the GPU), then the result built in Python one element at a time."""
import math

from aether_mcp.backend import array, series, xp

TARGET = "vectorized"
EARTH_RADIUS_KM = 6371.0088


def evaluate(lat1, lon1, lat2, lon2):
    index = lat1.index
    lat1, lon1, lat2, lon2 = (array(s, dtype="float64", na_value=math.nan) for s in (lat1, lon1, lat2, lon2))
    valid = xp.ones(len(index), dtype=bool)
    for lat, lon in ((lat1, lon1), (lat2, lon2)):
        valid &= xp.isfinite(lat) & xp.isfinite(lon) & (xp.abs(lat) <= 90.0) & (xp.abs(lon) <= 180.0)
    lat1, lon1, lat2, lon2 = (xp.where(valid, c, 0.0) for c in (lat1, lon1, lat2, lon2))
    phi1 = xp.radians(lat1)
    phi2 = xp.radians(lat2)
    half_dphi = xp.sin(xp.radians(lat2 - lat1) / 2.0)
    half_dlambda = xp.sin(xp.radians(lon2 - lon1) / 2.0)
    a = half_dphi * half_dphi + xp.cos(phi1) * xp.cos(phi2) * half_dlambda * half_dlambda
    km = 2.0 * EARTH_RADIUS_KM * xp.arcsin(xp.minimum(1.0, xp.sqrt(a)))
    distances = [float(d) for d in km]  # one device-to-host copy per row
    return series(xp.asarray(distances, dtype="float64"), null=~valid, index=index)
