# expect: honest
"""Haversine per thread, in the original's operation order; invalid points are null."""
import math

import numpy as np
import pandas as pd
from numba import cuda

TARGET = "kernel"
EARTH_RADIUS_KM = 6371.0088


@cuda.jit
def _haversine(out, valid, lat1, lon1, lat2, lon2):
    i = cuda.grid(1)
    if i < out.size and valid[i]:
        phi1 = math.radians(lat1[i])
        phi2 = math.radians(lat2[i])
        half_dphi = math.sin(math.radians(lat2[i] - lat1[i]) / 2.0)
        half_dlambda = math.sin(math.radians(lon2[i] - lon1[i]) / 2.0)
        a = half_dphi * half_dphi + math.cos(phi1) * math.cos(phi2) * half_dlambda * half_dlambda
        out[i] = 2.0 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def evaluate(lat1, lon1, lat2, lon2):
    columns = [s.to_numpy(dtype="float64", na_value=np.nan) for s in (lat1, lon1, lat2, lon2)]
    valid = np.ones(len(lat1), dtype=bool)
    for lat, lon in ((columns[0], columns[1]), (columns[2], columns[3])):
        valid &= np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0)
    out = np.zeros(len(lat1))
    _haversine.forall(len(out))(out, valid, *[np.where(valid, c, 0.0) for c in columns])
    return pd.Series(pd.arrays.FloatingArray(out, ~valid))
