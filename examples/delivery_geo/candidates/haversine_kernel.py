"""``haversine_km`` as a numba.cuda kernel: one thread per row.

Each thread applies ``_haversine``'s validity rule and formula, in the same
operation order, to its own row.  On the GPU backend the columns are CuPy
arrays on the device and the kernel runs natively; on the CPU backend they are
NumPy arrays and the kernel runs under numba's CUDA simulator, where ``math``
is Python's own, so the results are bit for bit the original's (correctness
only: simulated runs say nothing about speed).  On a GPU, CUDA's libdevice
sin/cos/asin may differ from the host's libm in the last bit.
"""

import math

from numba import cuda

from aether_mcp.backend import array, series, xp

TARGET = "kernel"

EARTH_RADIUS_KM = 6371.0088


@cuda.jit
def _haversine(out, valid, lat1, lon1, lat2, lon2):
    i = cuda.grid(1)
    if i >= out.size:
        return
    a_lat, a_lon, b_lat, b_lon = lat1[i], lon1[i], lat2[i], lon2[i]
    ok = math.isfinite(a_lat) and math.isfinite(a_lon) and abs(a_lat) <= 90.0 and abs(a_lon) <= 180.0
    ok = ok and math.isfinite(b_lat) and math.isfinite(b_lon) and abs(b_lat) <= 90.0 and abs(b_lon) <= 180.0
    valid[i] = ok
    if not ok:
        out[i] = 0.0
        return
    phi1 = math.radians(a_lat)
    phi2 = math.radians(b_lat)
    half_dphi = math.sin(math.radians(b_lat - a_lat) / 2.0)
    half_dlambda = math.sin(math.radians(b_lon - a_lon) / 2.0)
    a = half_dphi * half_dphi + math.cos(phi1) * math.cos(phi2) * half_dlambda * half_dlambda
    out[i] = 2.0 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def evaluate(lat1, lon1, lat2, lon2):
    index = lat1.index
    size = len(index)
    columns = [array(s, "float64", na_value=float("nan")) for s in (lat1, lon1, lat2, lon2)]
    out = xp.zeros(size, dtype="float64")
    valid = xp.zeros(size, dtype=bool)
    if size:
        _haversine.forall(size)(out, valid, *columns)
    return series(out, null=~valid, index=index)
