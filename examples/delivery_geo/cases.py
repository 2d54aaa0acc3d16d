"""Pinned behaviour of haversine_km(lat1, lon1, lat2, lon2).

`args` are in UDF argument order; `expected` is what Spark returned for
the original UDF after collect() (float for double, None for null).
Spark schema: lat1 double, lon1 double, lat2 double, lon2 double.
"""

CASES = [
    {
        "args": [52.52, 13.405, 48.8566, 2.3522],
        "expected": 877.4645379215092,
        "why": "Berlin -> Paris",
    },
    {
        "args": [51.5074, -0.1278, 40.7128, -74.006],
        "expected": 5570.229873656523,
        "why": "London -> New York",
    },
    {
        "args": [10.0, 20.0, 10.0, 20.0],
        "expected": 0.0,
        "why": "same point -> 0.0",
    },
    {
        "args": [-0.0, -0.0, 0.0, 0.0],
        "expected": 0.0,
        "why": "-0.0 vs 0.0 is the same point -> 0.0",
    },
    {
        "args": [0.0, 0.0, 0.0, 180.0],
        "expected": 20015.114442035923,
        "why": "antipodal on the equator: half the circumference",
    },
    {
        "args": [90.0, 0.0, -90.0, 0.0],
        "expected": 20015.114442035923,
        "why": "pole to pole",
    },
    {
        "args": [45.0, 10.0, -45.0, -170.0],
        "expected": 20015.114442035923,
        "why": "exactly antipodal points: half the circumference",
    },
    {
        "args": [-57.756702418792905, -0.6593662230527286, 57.75670241995613, 179.34063377694727],
        "expected": 20015.114442035923,
        "why": "near-antipodal: rounding gives sqrt(a) = 1.0000000000000002, clamped to 1 (math.asin would raise)",
    },
    {
        "args": [0.0, -180.0, 0.0, 180.0],
        "expected": 1.5604471068519238e-12,
        "why": "date line: -180 and 180 are the same meridian, but sin(pi) != 0 leaves ~1.6e-12 km",
    },
    {
        "args": [None, 13.4, 48.8, 2.3],
        "expected": None,
        "why": "null coordinate -> null",
    },
    {
        "args": [float("nan"), 13.4, 48.8, 2.3],
        "expected": None,
        "why": "NaN coordinate -> null (NaN arrives the same as null)",
    },
    {
        "args": [52.5, float("inf"), 48.8, 2.3],
        "expected": None,
        "why": "inf coordinate -> null",
    },
    {
        "args": [90.0000001, 0.0, 0.0, 0.0],
        "expected": None,
        "why": "latitude just over 90 -> null",
    },
    {
        "args": [0.0, 0.0, 0.0, -180.5],
        "expected": None,
        "why": "longitude beyond 180 -> null",
    },
    {
        "args": [1e-09, 0.0, 0.0, 0.0],
        "expected": 1.1119508023353292e-07,
        "why": "tiny distance",
    },
    {
        "args": [None, None, None, None],
        "expected": None,
        "why": "all null -> null",
    },
]
