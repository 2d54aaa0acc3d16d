"""Vectorised equivalent of ``haversine_km``, one source for both backends.

``xp`` is NumPy on the CPU backend and CuPy on the GPU backend; ``array`` and
``series`` move between the Series the harness hands over (pandas with nullable
dtypes, or cuDF) and plain arrays.  The original pandas UDF sees null and NaN
alike (both NaN), so nulls are read back as NaN here.

The arithmetic is written in the same order as ``_haversine`` so every
operation rounds the same way.  On the CPU backend np.radians, np.sin, np.cos
and np.sqrt give the same bits as their ``math`` counterparts; np.arcsin does
not on x86-64 with AVX-512 (NumPy's SIMD loop is off by one ULP on about 8% of
inputs), so the arcsine runs as Arrow's compute kernel, which calls the same
libm as ``math.asin`` and is as fast.  On a GPU, CUDA's sin/cos/asin may differ in
the last bit: byte_compare with backend="gpu" shows where, and a difference
you accept is a recorded ULP deviation.
"""

import pyarrow as pa
import pyarrow.compute as pc

from aether_mcp.backend import array, series, xp

TARGET = "vectorized"

EARTH_RADIUS_KM = 6371.0088


def evaluate(lat1, lon1, lat2, lon2):
    index = lat1.index
    lat1, lon1, lat2, lon2 = (array(s, "float64", na_value=float("nan")) for s in (lat1, lon1, lat2, lon2))

    # Same validity rule as _haversine: nulls arrive as NaN, so "finite"
    # covers None, NaN and +/-inf; then the coordinate ranges.
    valid = xp.ones(len(index), dtype=bool)
    for lat, lon in ((lat1, lon1), (lat2, lon2)):
        valid &= xp.isfinite(lat) & xp.isfinite(lon)
        valid &= (xp.abs(lat) <= 90.0) & (xp.abs(lon) <= 180.0)

    # Park invalid rows on 0.0 so the trig below raises no warnings; their
    # result is null at the end anyway.
    lat1, lon1, lat2, lon2 = (xp.where(valid, x, 0.0) for x in (lat1, lon1, lat2, lon2))

    phi1 = xp.radians(lat1)
    phi2 = xp.radians(lat2)
    half_dphi = xp.sin(xp.radians(lat2 - lat1) / 2.0)
    half_dlambda = xp.sin(xp.radians(lon2 - lon1) / 2.0)
    a = half_dphi * half_dphi + xp.cos(phi1) * xp.cos(phi2) * half_dlambda * half_dlambda
    # min(1.0, sqrt(a)) in Python returns 1.0 unless sqrt(a) < 1.0; no NaN
    # can reach here, so xp.minimum is the same.
    km = 2.0 * EARTH_RADIUS_KM * _arcsin(xp.minimum(1.0, xp.sqrt(a)))

    # Invalid rows are null, exactly like the None the UDF returns (Spark
    # turns it, and any NaN a pandas UDF returns, into null).
    return series(xp.where(valid, km, 0.0), null=~valid, index=index)


def _arcsin(values):
    if xp.__name__ == "numpy":
        return pc.asin(pa.array(values)).to_numpy(zero_copy_only=False)
    return xp.arcsin(values)
