"""Vectorised (NumPy) equivalent of ``haversine_km``.

The harness feeds the four coordinate columns as pandas ``Float64`` arrays in
which null and NaN are distinct; the original pandas UDF sees both as NaN, so
they are read back that way here.  The arithmetic is written in the same order as
``_haversine`` so every operation rounds the same way; np.radians, np.sin,
np.cos, np.sqrt and np.arcsin give the same bits as their ``math``
counterparts on the reference machine (x86-64 without AVX-512, where NumPy
uses the libm-equivalent float64 loops).
"""

import numpy as np
import pandas as pd

TARGET = "vectorized"

EARTH_RADIUS_KM = 6371.0088


def evaluate(lat1: pd.Series, lon1: pd.Series,
             lat2: pd.Series, lon2: pd.Series) -> pd.Series:
    index = lat1.index
    lat1, lon1, lat2, lon2 = (
        s.to_numpy(dtype="float64", na_value=np.nan) for s in (lat1, lon1, lat2, lon2)
    )

    # Same validity rule as _haversine: nulls arrive as NaN, so "finite"
    # covers None, NaN and +/-inf; then the coordinate ranges.
    valid = np.ones(len(index), dtype=bool)
    for lat, lon in ((lat1, lon1), (lat2, lon2)):
        valid &= np.isfinite(lat) & np.isfinite(lon)
        valid &= (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0)

    # Park invalid rows on 0.0 so the trig below raises no warnings; their
    # result is replaced by NaN at the end anyway.
    lat1, lon1, lat2, lon2 = (np.where(valid, x, 0.0) for x in (lat1, lon1, lat2, lon2))

    phi1 = np.radians(lat1)
    phi2 = np.radians(lat2)
    half_dphi = np.sin(np.radians(lat2 - lat1) / 2.0)
    half_dlambda = np.sin(np.radians(lon2 - lon1) / 2.0)
    a = half_dphi * half_dphi + np.cos(phi1) * np.cos(phi2) * half_dlambda * half_dlambda
    # min(1.0, sqrt(a)) in Python returns 1.0 unless sqrt(a) < 1.0; no NaN
    # can reach here, so np.minimum is the same.
    km = 2.0 * EARTH_RADIUS_KM * np.arcsin(np.minimum(1.0, np.sqrt(a)))

    # Invalid rows are null, exactly like the None the UDF returns (Spark
    # turns it, and any NaN a pandas UDF returns, into null): a masked array.
    return pd.Series(pd.arrays.FloatingArray(np.where(valid, km, 0.0), ~valid), index=index)
